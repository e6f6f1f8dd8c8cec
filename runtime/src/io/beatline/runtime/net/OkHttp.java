package io.beatline.runtime.net;

import okhttp3.EventListener;
import okhttp3.OkHttpClient;

/**
 * What {@code beatline-instrument} calls instead of
 * {@code OkHttpClient.Builder.build()} and {@code new OkHttpClient()} in the
 * app's code (issue 16; instrumenter/README.md, "Network requests"): the
 * client gets Beatline's {@link EventListener.Factory}, which wraps the one
 * the app set (its listeners still receive every callback).
 *
 * <p>This class names OkHttp types: it is loaded only when such a call site
 * runs, i.e. when OkHttp is on the class path. Compiled against OkHttp
 * 3.13's API and binary compatible with 3.x and 4.x.
 */
public final class OkHttp {
    private OkHttp() {
    }

    /**
     * Replaces {@code builder.build()}: builds the client as the app asked
     * (an exception of {@code build()} reaches the app unchanged), then
     * {@link #install}. The app's builder is not changed.
     */
    public static OkHttpClient build(OkHttpClient.Builder builder) {
        return install(builder.build());
    }

    /** Replaces {@code new OkHttpClient()}. */
    public static OkHttpClient newClient() {
        return install(new OkHttpClient());
    }

    /**
     * The client with Beatline's listener factory wrapping its own: a copy
     * ({@code newBuilder()}: same dispatcher, connection pool and settings),
     * or {@code client} itself when it has Beatline's factory already or
     * anything fails (never throws).
     */
    public static OkHttpClient install(OkHttpClient client) {
        try {
            EventListener.Factory f = client.eventListenerFactory();
            if (f instanceof Listener.Factory) {
                return client;
            }
            return client.newBuilder().eventListenerFactory(new Listener.Factory(f)).build();
        } catch (Throwable t) {
            return client;
        }
    }
}
