package io.beatline.runtime.net;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;

/**
 * An HttpsURLConnection that times its request (issue 16): every method is the app's connection's; the ones that
 * move the request on also tell {@link UrlTiming}. Made by {@link Url}.
 */
final class TimedHttpsConnection extends javax.net.ssl.HttpsURLConnection {
    private final javax.net.ssl.HttpsURLConnection c;
    private final UrlTiming t;

    TimedHttpsConnection(javax.net.ssl.HttpsURLConnection c) {
        super(c.getURL());
        this.c = c;
        this.t = new UrlTiming(c);
    }

    /** Java 9's setAuthenticator: the wrapped connection's (HttpURLConnection's own throws). */
    public void setAuthenticator(java.net.Authenticator a) {
        UrlTiming.delegate(c, java.net.HttpURLConnection.class, "setAuthenticator",
                new Class<?>[] {java.net.Authenticator.class}, a);
    }

    /** Java 12's getSSLSession: the wrapped connection's (HttpsURLConnection's own throws). */
    @SuppressWarnings("unchecked")
    public java.util.Optional<javax.net.ssl.SSLSession> getSSLSession() {
        return (java.util.Optional<javax.net.ssl.SSLSession>) UrlTiming.delegate(c,
                javax.net.ssl.HttpsURLConnection.class, "getSSLSession", new Class<?>[0]);
    }

    @Override
    public void setFixedLengthStreamingMode(int n) {
        c.setFixedLengthStreamingMode(n);
    }

    @Override
    public void setFixedLengthStreamingMode(long n) {
        c.setFixedLengthStreamingMode(n);
    }

    @Override
    public void setChunkedStreamingMode(int n) {
        c.setChunkedStreamingMode(n);
    }

    @Override
    public void setInstanceFollowRedirects(boolean b) {
        c.setInstanceFollowRedirects(b);
    }

    @Override
    public boolean getInstanceFollowRedirects() {
        return c.getInstanceFollowRedirects();
    }

    @Override
    public void setRequestMethod(String m) throws java.net.ProtocolException {
        c.setRequestMethod(m);
    }

    @Override
    public String getRequestMethod() {
        return c.getRequestMethod();
    }

    @Override
    public boolean usingProxy() {
        return c.usingProxy();
    }

    @Override
    public java.security.Permission getPermission() throws IOException {
        return c.getPermission();
    }

    @Override
    public void setConnectTimeout(int ms) {
        c.setConnectTimeout(ms);
    }

    @Override
    public int getConnectTimeout() {
        return c.getConnectTimeout();
    }

    @Override
    public void setReadTimeout(int ms) {
        c.setReadTimeout(ms);
    }

    @Override
    public int getReadTimeout() {
        return c.getReadTimeout();
    }

    @Override
    public java.net.URL getURL() {
        return c.getURL();
    }

    @Override
    public String toString() {
        return c.toString();
    }

    @Override
    public void setDoInput(boolean b) {
        c.setDoInput(b);
    }

    @Override
    public boolean getDoInput() {
        return c.getDoInput();
    }

    @Override
    public void setDoOutput(boolean b) {
        c.setDoOutput(b);
    }

    @Override
    public boolean getDoOutput() {
        return c.getDoOutput();
    }

    @Override
    public void setAllowUserInteraction(boolean b) {
        c.setAllowUserInteraction(b);
    }

    @Override
    public boolean getAllowUserInteraction() {
        return c.getAllowUserInteraction();
    }

    @Override
    public void setUseCaches(boolean b) {
        c.setUseCaches(b);
    }

    @Override
    public boolean getUseCaches() {
        return c.getUseCaches();
    }

    @Override
    public void setIfModifiedSince(long t) {
        c.setIfModifiedSince(t);
    }

    @Override
    public long getIfModifiedSince() {
        return c.getIfModifiedSince();
    }

    @Override
    public boolean getDefaultUseCaches() {
        return c.getDefaultUseCaches();
    }

    @Override
    public void setDefaultUseCaches(boolean b) {
        c.setDefaultUseCaches(b);
    }

    @Override
    public void setRequestProperty(String k, String v) {
        c.setRequestProperty(k, v);
    }

    @Override
    public void addRequestProperty(String k, String v) {
        c.addRequestProperty(k, v);
    }

    @Override
    public String getRequestProperty(String k) {
        return c.getRequestProperty(k);
    }

    @Override
    public java.util.Map<String, java.util.List<String>> getRequestProperties() {
        return c.getRequestProperties();
    }

    @Override
    public String getCipherSuite() {
        return c.getCipherSuite();
    }

    @Override
    public java.security.cert.Certificate[] getLocalCertificates() {
        return c.getLocalCertificates();
    }

    @Override
    public java.security.cert.Certificate[] getServerCertificates() throws javax.net.ssl.SSLPeerUnverifiedException {
        return c.getServerCertificates();
    }

    @Override
    public java.security.Principal getPeerPrincipal() throws javax.net.ssl.SSLPeerUnverifiedException {
        return c.getPeerPrincipal();
    }

    @Override
    public java.security.Principal getLocalPrincipal() {
        return c.getLocalPrincipal();
    }

    @Override
    public void setHostnameVerifier(javax.net.ssl.HostnameVerifier v) {
        c.setHostnameVerifier(v);
    }

    @Override
    public javax.net.ssl.HostnameVerifier getHostnameVerifier() {
        return c.getHostnameVerifier();
    }

    @Override
    public void setSSLSocketFactory(javax.net.ssl.SSLSocketFactory f) {
        c.setSSLSocketFactory(f);
    }

    @Override
    public javax.net.ssl.SSLSocketFactory getSSLSocketFactory() {
        return c.getSSLSocketFactory();
    }

    @Override
    public String getHeaderFieldKey(int n) {
        t.headers();
        return c.getHeaderFieldKey(n);
    }

    @Override
    public String getHeaderField(int n) {
        t.headers();
        return c.getHeaderField(n);
    }

    @Override
    public long getHeaderFieldDate(String k, long d) {
        t.headers();
        return c.getHeaderFieldDate(k, d);
    }

    @Override
    public int getContentLength() {
        t.headers();
        return c.getContentLength();
    }

    @Override
    public long getContentLengthLong() {
        t.headers();
        return c.getContentLengthLong();
    }

    @Override
    public String getContentType() {
        t.headers();
        return c.getContentType();
    }

    @Override
    public String getContentEncoding() {
        t.headers();
        return c.getContentEncoding();
    }

    @Override
    public long getExpiration() {
        t.headers();
        return c.getExpiration();
    }

    @Override
    public long getDate() {
        t.headers();
        return c.getDate();
    }

    @Override
    public long getLastModified() {
        t.headers();
        return c.getLastModified();
    }

    @Override
    public String getHeaderField(String k) {
        t.headers();
        return c.getHeaderField(k);
    }

    @Override
    public java.util.Map<String, java.util.List<String>> getHeaderFields() {
        t.headers();
        return c.getHeaderFields();
    }

    @Override
    public int getHeaderFieldInt(String k, int d) {
        t.headers();
        return c.getHeaderFieldInt(k, d);
    }

    @Override
    public long getHeaderFieldLong(String k, long d) {
        t.headers();
        return c.getHeaderFieldLong(k, d);
    }

    @Override
    public String getResponseMessage() throws IOException {
        t.responseCode();
        return c.getResponseMessage();
    }

    @Override
    public int getResponseCode() throws IOException {
        return t.responseCode();
    }

    @Override
    public void connect() throws IOException {
        t.connect();
    }

    @Override
    public OutputStream getOutputStream() throws IOException {
        return t.outputStream();
    }

    @Override
    public InputStream getInputStream() throws IOException {
        return t.inputStream();
    }

    @Override
    public InputStream getErrorStream() {
        return t.errorStream();
    }

    @Override
    public void disconnect() {
        t.disconnect();
    }

    @Override
    public Object getContent() throws IOException {
        t.responseCode();
        try {
            return c.getContent();
        } finally {
            t.disconnect0();
        }
    }

    @Override
    public Object getContent(@SuppressWarnings("rawtypes") Class[] classes) throws IOException {
        t.responseCode();
        try {
            return c.getContent(classes);
        } finally {
            t.disconnect0();
        }
    }
}
