// Real-input driver for tests/realworld/proguard_retrace_test.sh.
//
// Each Site provokes one exception thrown from inside library code
// (commons-lang3, Guava, OkHttp, Okio), catches it in main and prints its
// full stack trace to System.out.  The same program is run twice: on the
// original jars and after ProGuard has shrunk, optimized (inlined) and
// obfuscated driver + libraries together.  Retracing the second output with
// ProGuard's mapping must give back the first one byte for byte.
//
// Rules the sites follow so that both runs print the same text:
//  - messages are deterministic and never embed a library class name (that
//    would be obfuscated inside the message), a hash code or an identity;
//  - no network, no threads, no clock in messages;
//  - where a trace has a cause, the "... N more" elision counts frames shared
//    with the enclosing trace.  Those shared frames must not contain inlined
//    code, or the obfuscated run elides a different number of (physical)
//    frames.  So causes are either wrapped by the driver itself, created by
//    the driver before the library call, or wrapped inside a library method
//    that the driver reaches through an interface call (never inlined).
//
// Compiled with javac --release 8 against the Debian jars.

import com.google.common.base.Ascii;
import com.google.common.base.Functions;
import com.google.common.base.Joiner;
import com.google.common.base.Preconditions;
import com.google.common.base.Splitter;
import com.google.common.base.Stopwatch;
import com.google.common.base.Strings;
import com.google.common.base.Verify;
import com.google.common.base.VerifyException;
import com.google.common.cache.CacheBuilder;
import com.google.common.cache.CacheLoader;
import com.google.common.cache.LoadingCache;
import com.google.common.collect.ArrayTable;
import com.google.common.collect.BiMap;
import com.google.common.collect.EvictingQueue;
import com.google.common.collect.HashBiMap;
import com.google.common.collect.ConcurrentHashMultiset;
import com.google.common.collect.ImmutableList;
import com.google.common.collect.ImmutableMap;
import com.google.common.collect.ImmutableSet;
import com.google.common.collect.ImmutableSortedMap;
import com.google.common.collect.Iterables;
import com.google.common.collect.Iterators;
import com.google.common.collect.Lists;
import com.google.common.collect.Maps;
import com.google.common.collect.MoreCollectors;
import com.google.common.collect.Ordering;
import com.google.common.collect.Range;
import com.google.common.hash.HashCode;
import com.google.common.hash.Hasher;
import com.google.common.hash.Hashing;
import com.google.common.io.BaseEncoding;
import com.google.common.io.ByteStreams;
import com.google.common.math.DoubleMath;
import com.google.common.math.IntMath;
import com.google.common.math.LongMath;
import com.google.common.net.HostAndPort;
import com.google.common.net.InetAddresses;
import com.google.common.net.InternetDomainName;
import com.google.common.primitives.Ints;
import com.google.common.primitives.UnsignedInts;
import com.google.common.primitives.UnsignedLong;
import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.UncheckedExecutionException;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.StringReader;
import java.math.RoundingMode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import java.util.zip.Inflater;
import okhttp3.CacheControl;
import okhttp3.CertificatePinner;
import okhttp3.ConnectionPool;
import okhttp3.Dispatcher;
import okhttp3.FormBody;
import okhttp3.Headers;
import okhttp3.HttpUrl;
import okhttp3.MediaType;
import okhttp3.MultipartBody;
import okhttp3.OkHttpClient;
import okhttp3.Protocol;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import okhttp3.internal.http.StatusLine;
import okio.Buffer;
import okio.BufferedSource;
import okio.ByteString;
import okio.GzipSource;
import okio.InflaterSource;
import okio.Okio;
import okio.Pipe;
import okio.Source;
import okio.Timeout;
import org.apache.commons.lang3.ArrayUtils;
import org.apache.commons.lang3.BooleanUtils;
import org.apache.commons.lang3.CharUtils;
import org.apache.commons.lang3.Conversion;
import org.apache.commons.lang3.LocaleUtils;
import org.apache.commons.lang3.RandomStringUtils;
import org.apache.commons.lang3.SerializationUtils;
import org.apache.commons.lang3.StringUtils;
import org.apache.commons.lang3.Validate;
import org.apache.commons.lang3.builder.HashCodeBuilder;
import org.apache.commons.lang3.exception.ContextedRuntimeException;
import org.apache.commons.lang3.math.Fraction;
import org.apache.commons.lang3.math.NumberUtils;

public final class Driver {

    /** One exception site: run() must throw from inside library code. */
    abstract static class Site {
        final String name;

        Site(String name) {
            this.name = name;
        }

        abstract void run() throws Exception;
    }

    private Driver() {
    }

    public static void main(String[] args) {
        List<Site> sites = sites();
        int silent = 0;
        for (int i = 0; i < sites.size(); i++) {
            Site site = sites.get(i);
            System.out.println("### site " + (i + 1) + " " + site.name);
            try {
                site.run();
                System.out.println("### NO EXCEPTION");
                silent++;
            } catch (Throwable t) {
                t.printStackTrace(System.out);
            }
        }
        System.out.flush();
        if (silent != 0) {
            System.err.println("Driver: " + silent + " site(s) threw nothing");
            System.exit(1);
        }
    }

    // A driver-side cache loader: its load() frame is app code called from
    // deep inside Guava's LocalCache, and it is obfuscated too.
    static final class FailingLoader extends CacheLoader<String, String> {
        @Override
        public String load(String key) throws IOException {
            throw new IOException("no value for " + key);
        }
    }

    // Helpers the driver calls through; not kept, so ProGuard may inline or
    // rename them like any library code.
    static final class Parsing {
        private Parsing() {
        }

        static long parseAll(String text) {
            long sum = 0;
            for (String part : Splitter.on(',').trimResults().split(text)) {
                sum = LongMath.checkedAdd(sum, UnsignedInts.parseUnsignedInt(part));
            }
            return sum;
        }

        static int inflateInto(Source source, Buffer sink) throws IOException {
            long n = source.read(sink, 64);
            return (int) n;
        }
    }

    @SuppressWarnings({"deprecation", "unchecked", "rawtypes"})
    static List<Site> sites() {
        List<Site> s = new ArrayList<>();

        // ---------------------------------------------------------------- commons-lang3
        s.add(new Site("lang3-StringUtils-abbreviate-width") {
            void run() {
                StringUtils.abbreviate("abcdefg", 3);
            }
        });
        s.add(new Site("lang3-StringUtils-truncate-negative") {
            void run() {
                StringUtils.truncate("abc", -1);
            }
        });
        s.add(new Site("lang3-StringUtils-levenshtein-threshold") {
            void run() {
                StringUtils.getLevenshteinDistance("kitten", "sitting", -1);
            }
        });
        s.add(new Site("lang3-StringUtils-replaceEach-lengths") {
            void run() {
                StringUtils.replaceEach("abc", new String[] {"a", "b"}, new String[] {"x"});
            }
        });
        s.add(new Site("lang3-StringUtils-replaceEachRepeatedly-loop") {
            void run() {
                StringUtils.replaceEachRepeatedly("ab", new String[] {"a", "b"}, new String[] {"b", "a"});
            }
        });
        s.add(new Site("lang3-StringUtils-toEncodedString-charset") {
            void run() throws Exception {
                StringUtils.getBytes("x", "no-such-charset");
            }
        });
        s.add(new Site("lang3-Validate-notNull") {
            void run() {
                Validate.notNull(null, "widget %s", "w1");
            }
        });
        s.add(new Site("lang3-Validate-inclusiveBetween") {
            void run() {
                Validate.inclusiveBetween(1, 3, 5);
            }
        });
        s.add(new Site("lang3-Validate-validIndex") {
            void run() {
                Validate.validIndex(new Integer[] {1, 2}, 5);
            }
        });
        s.add(new Site("lang3-Validate-matchesPattern") {
            void run() {
                Validate.matchesPattern("abc", "\\d+");
            }
        });
        s.add(new Site("lang3-Validate-isInstanceOf") {
            void run() {
                Validate.isInstanceOf(String.class, 3);
            }
        });
        s.add(new Site("lang3-Validate-noNullElements") {
            void run() {
                Validate.noNullElements(Arrays.asList("a", null));
            }
        });
        s.add(new Site("lang3-Validate-finite") {
            void run() {
                Validate.finite(Double.NaN);
            }
        });
        s.add(new Site("lang3-NumberUtils-createNumber") {
            void run() {
                NumberUtils.createNumber("12abc");
            }
        });
        s.add(new Site("lang3-NumberUtils-createInteger") {
            void run() {
                NumberUtils.createInteger("zz");
            }
        });
        s.add(new Site("lang3-NumberUtils-max-empty") {
            void run() {
                NumberUtils.max(new int[0]);
            }
        });
        s.add(new Site("lang3-ArrayUtils-remove-index") {
            void run() {
                ArrayUtils.remove(new int[] {1, 2}, 5);
            }
        });
        s.add(new Site("lang3-ArrayUtils-insert-index") {
            void run() {
                ArrayUtils.insert(5, new int[] {1}, 2);
            }
        });
        s.add(new Site("lang3-ArrayUtils-toPrimitive-null") {
            void run() {
                ArrayUtils.toPrimitive(new Integer[] {1, null});
            }
        });
        s.add(new Site("lang3-CharUtils-toIntValue") {
            void run() {
                CharUtils.toIntValue('x');
            }
        });
        s.add(new Site("lang3-BooleanUtils-toBoolean") {
            void run() {
                BooleanUtils.toBoolean("maybe", "yes", "no");
            }
        });
        s.add(new Site("lang3-LocaleUtils-toLocale") {
            void run() {
                LocaleUtils.toLocale("en_G");
            }
        });
        s.add(new Site("lang3-RandomStringUtils-negative") {
            void run() {
                RandomStringUtils.random(-1);
            }
        });
        s.add(new Site("lang3-Range-between-null") {
            void run() {
                org.apache.commons.lang3.Range.between(null, 1);
            }
        });
        s.add(new Site("lang3-Fraction-zero-denominator") {
            void run() {
                Fraction.getFraction(1, 0);
            }
        });
        s.add(new Site("lang3-Fraction-divideBy-zero") {
            void run() {
                Fraction.getFraction(1, 2).divideBy(Fraction.ZERO);
            }
        });
        s.add(new Site("lang3-Conversion-hexDigitToInt") {
            void run() {
                Conversion.hexDigitToInt('z');
            }
        });
        s.add(new Site("lang3-HashCodeBuilder-even") {
            void run() {
                new HashCodeBuilder(2, 2);
            }
        });
        s.add(new Site("lang3-SerializationUtils-deserialize-wrapped-twice") {
            void run() {
                InputStream in = new ByteArrayInputStream(new byte[] {1, 2, 3, 4});
                try {
                    SerializationUtils.deserialize(in);
                } catch (RuntimeException e) {
                    throw new ContextedRuntimeException("deserialize failed", e)
                            .addContextValue("bytes", 4);
                }
            }
        });

        s.add(new Site("lang3-StrSubstitutor-cycle") {
            void run() {
                java.util.Map<String, String> vars = new java.util.HashMap<>();
                vars.put("a", "${b}");
                vars.put("b", "${a}");
                org.apache.commons.lang3.text.StrSubstitutor.replace("x=${a}", vars);
            }
        });
        s.add(new Site("lang3-DurationFormatUtils-negative") {
            void run() {
                org.apache.commons.lang3.time.DurationFormatUtils.formatDuration(-1L, "H:mm");
            }
        });
        s.add(new Site("lang3-FastDateFormat-parse") {
            void run() throws Exception {
                org.apache.commons.lang3.time.FastDateFormat.getInstance("yyyy-MM-dd",
                        java.util.TimeZone.getTimeZone("UTC"), java.util.Locale.ROOT).parse("not a date");
            }
        });
        s.add(new Site("lang3-ArrayUtils-toMap") {
            void run() {
                ArrayUtils.toMap(new Object[] {"plain"});
            }
        });
        s.add(new Site("lang3-ClassUtils-getClass") {
            void run() throws Exception {
                org.apache.commons.lang3.ClassUtils.getClass("no.such.Klass");
            }
        });

        // ---------------------------------------------------------------- Guava
        s.add(new Site("guava-Preconditions-checkArgument") {
            void run() {
                Preconditions.checkArgument(false, "expected %s but got %s", 1, 2);
            }
        });
        s.add(new Site("guava-Preconditions-checkElementIndex") {
            void run() {
                Preconditions.checkElementIndex(5, 3);
            }
        });
        s.add(new Site("guava-Preconditions-checkPositionIndexes") {
            void run() {
                Preconditions.checkPositionIndexes(2, 1, 3);
            }
        });
        s.add(new Site("guava-Preconditions-checkState") {
            void run() {
                Preconditions.checkState(false, "state %s", "bad");
            }
        });
        s.add(new Site("guava-ImmutableList-null-element") {
            void run() {
                ImmutableList.of("a", null);
            }
        });
        s.add(new Site("guava-ImmutableMap-duplicate-key") {
            void run() {
                ImmutableMap.of("k", 1, "k", 2);
            }
        });
        s.add(new Site("guava-ImmutableSortedMap-duplicate-key") {
            void run() {
                ImmutableSortedMap.of("a", 1, "a", 2);
            }
        });
        s.add(new Site("guava-ImmutableSet-builder-null") {
            void run() {
                ImmutableSet.builder().add("a").add((Object) null);
            }
        });
        s.add(new Site("guava-ImmutableList-add") {
            void run() {
                ImmutableList.of("a").add("b");
            }
        });
        s.add(new Site("guava-Splitter-empty-separator") {
            void run() {
                Splitter.on("");
            }
        });
        s.add(new Site("guava-Splitter-mapSplitter-chunk") {
            void run() {
                Splitter.on(',').withKeyValueSeparator('=').split("a=1,b");
            }
        });
        s.add(new Site("guava-Splitter-fixedLength") {
            void run() {
                Splitter.fixedLength(0);
            }
        });
        s.add(new Site("guava-Joiner-null-part") {
            void run() {
                Joiner.on(',').join(Arrays.asList("a", null));
            }
        });
        s.add(new Site("guava-Ints-checkedCast") {
            void run() {
                Ints.checkedCast(1L << 40);
            }
        });
        s.add(new Site("guava-Ints-fromByteArray") {
            void run() {
                Ints.fromByteArray(new byte[2]);
            }
        });
        s.add(new Site("guava-Ints-stringConverter") {
            void run() {
                Ints.stringConverter().convert("x");
            }
        });
        s.add(new Site("guava-LongMath-checkedAdd") {
            void run() {
                LongMath.checkedAdd(Long.MAX_VALUE, 1);
            }
        });
        s.add(new Site("guava-IntMath-log2") {
            void run() {
                IntMath.log2(0, RoundingMode.FLOOR);
            }
        });
        s.add(new Site("guava-IntMath-factorial") {
            void run() {
                IntMath.factorial(-1);
            }
        });
        s.add(new Site("guava-DoubleMath-roundToInt") {
            void run() {
                DoubleMath.roundToInt(Double.NaN, RoundingMode.HALF_UP);
            }
        });
        s.add(new Site("guava-Strings-repeat") {
            void run() {
                Strings.repeat("ab", -1);
            }
        });
        s.add(new Site("guava-Ascii-truncate") {
            void run() {
                Ascii.truncate("abcdef", 2, "...");
            }
        });
        s.add(new Site("guava-Range-closed-inverted") {
            void run() {
                Range.closed(5, 1);
            }
        });
        s.add(new Site("guava-Range-intersection-disconnected") {
            void run() {
                Range.closedOpen(1, 2).intersection(Range.closed(5, 6));
            }
        });
        s.add(new Site("guava-HostAndPort-bracket") {
            void run() {
                HostAndPort.fromString("[::1");
            }
        });
        s.add(new Site("guava-InternetDomainName-invalid") {
            void run() {
                InternetDomainName.from("-bad-.com");
            }
        });
        s.add(new Site("guava-InetAddresses-forString") {
            void run() {
                InetAddresses.forString("1.2.3");
            }
        });
        s.add(new Site("guava-MediaType-parse-wrapped-in-library") {
            void run() {
                com.google.common.net.MediaType.parse("bad");
            }
        });
        s.add(new Site("guava-HashCode-fromString") {
            void run() {
                HashCode.fromString("abc");
            }
        });
        s.add(new Site("guava-UnsignedLong-valueOf") {
            void run() {
                UnsignedLong.valueOf(-1);
            }
        });
        s.add(new Site("guava-Iterables-getOnlyElement") {
            void run() {
                Iterables.getOnlyElement(Arrays.asList(1, 2));
            }
        });
        s.add(new Site("guava-Iterators-get") {
            void run() {
                Iterators.get(Arrays.asList(1, 2, 3).iterator(), 5);
            }
        });
        s.add(new Site("guava-Lists-newArrayListWithCapacity") {
            void run() {
                Lists.newArrayListWithCapacity(-1);
            }
        });
        s.add(new Site("guava-Ordering-max-empty") {
            void run() {
                Ordering.<Integer>natural().max(Collections.<Integer>emptyList());
            }
        });
        s.add(new Site("guava-Ordering-explicit-incomparable") {
            void run() {
                Ordering.explicit("a", "b").compare("a", "zebra");
            }
        });
        s.add(new Site("guava-MoreCollectors-onlyElement-stream") {
            void run() {
                Stream.of(1, 2).collect(MoreCollectors.onlyElement());
            }
        });
        s.add(new Site("guava-ByteStreams-readFully") {
            void run() throws IOException {
                ByteStreams.readFully(new ByteArrayInputStream(new byte[3]), new byte[10]);
            }
        });
        s.add(new Site("guava-ByteStreams-skipFully") {
            void run() throws IOException {
                ByteStreams.skipFully(new ByteArrayInputStream(new byte[3]), 10);
            }
        });
        s.add(new Site("guava-Hasher-reuse") {
            void run() {
                Hasher h = Hashing.sha256().newHasher();
                h.putInt(1);
                h.hash();
                h.putInt(2);
            }
        });
        s.add(new Site("guava-Verify-verify") {
            void run() {
                Verify.verify(false, "checksum %s", "mismatch");
            }
        });
        s.add(new Site("guava-BaseEncoding-decodingStream") {
            void run() throws IOException {
                InputStream in = BaseEncoding.base64().decodingStream(new StringReader("a!bc"));
                while (in.read() != -1) {
                    continue;
                }
            }
        });
        s.add(new Site("guava-Futures-getUnchecked-driver-cause") {
            void run() {
                // The cause is created on its own line so that its frame
                // differs from the enclosing trace's frame in this method.
                IOException cause = new IOException("disk on fire");
                Futures.getUnchecked(Futures.immediateFailedFuture(cause));
            }
        });
        s.add(new Site("guava-LoadingCache-getUnchecked-loader-cause") {
            void run() {
                LoadingCache<String, String> cache = CacheBuilder.newBuilder().build(new FailingLoader());
                cache.getUnchecked("k1");
            }
        });
        s.add(new Site("guava-Stopwatch-stop-twice") {
            void run() {
                Stopwatch.createUnstarted().stop();
            }
        });
        s.add(new Site("guava-EvictingQueue-negative") {
            void run() {
                EvictingQueue.create(-1);
            }
        });
        s.add(new Site("guava-ConcurrentHashMultiset-negative") {
            void run() {
                ConcurrentHashMultiset.create().add("a", -1);
            }
        });
        s.add(new Site("guava-ArrayTable-unknown-row") {
            void run() {
                ArrayTable.create(ImmutableList.of("r"), ImmutableList.of("c")).put("x", "c", 1);
            }
        });
        s.add(new Site("guava-Maps-uniqueIndex") {
            void run() {
                Maps.uniqueIndex(Arrays.asList("a", "a"), Functions.<String>identity());
            }
        });
        s.add(new Site("guava-HashBiMap-value-present") {
            void run() {
                BiMap<String, Integer> m = HashBiMap.create();
                m.put("a", 1);
                m.put("b", 1);
            }
        });
        s.add(new Site("guava-Ordering-sortedCopy-null-under-TimSort") {
            void run() {
                Ordering.<Integer>natural().sortedCopy(Arrays.asList(3, null, 1));
            }
        });
        s.add(new Site("guava-Lists-transform-converter") {
            void run() {
                Lists.transform(Arrays.asList("1", "x"), Ints.stringConverter()).get(1);
            }
        });
        s.add(new Site("guava-toImmutableList-collector-null") {
            void run() {
                Stream.of("a", null).collect(ImmutableList.toImmutableList());
            }
        });
        s.add(new Site("guava-ImmutableSortedSet-null") {
            void run() {
                com.google.common.collect.ImmutableSortedSet.of(2, 1, null);
            }
        });
        // Both go through a javac bridge method: its line is the class
        // declaration line, which other bridges of the class share.
        s.add(new Site("guava-RegularImmutableList-listIterator-bridge") {
            void run() {
                List<String> list = ImmutableList.of("a", "b");
                list.listIterator(5);
            }
        });
        s.add(new Site("guava-ReverseImmutableList-listIterator-bridge") {
            void run() {
                List<String> list = ImmutableList.of("a", "b").reverse();
                list.listIterator(5);
            }
        });
        s.add(new Site("guava-driver-helper-parseAll") {
            void run() {
                Parsing.parseAll("1, 2, -3");
            }
        });

        // ---------------------------------------------------------------- OkHttp
        s.add(new Site("okhttp-HttpUrl-get-no-scheme") {
            void run() {
                HttpUrl.get("no scheme here");
            }
        });
        s.add(new Site("okhttp-HttpUrl-Builder-port") {
            void run() {
                new HttpUrl.Builder().scheme("http").host("example.com").port(0);
            }
        });
        s.add(new Site("okhttp-HttpUrl-Builder-no-scheme") {
            void run() {
                new HttpUrl.Builder().build();
            }
        });
        s.add(new Site("okhttp-HttpUrl-invalid-host") {
            void run() {
                HttpUrl.get("http://[::1/");
            }
        });
        s.add(new Site("okhttp-HttpUrl-setPathSegment") {
            void run() {
                HttpUrl.get("http://example.com/a").newBuilder().setPathSegment(5, "x");
            }
        });
        s.add(new Site("okhttp-Request-Builder-no-url") {
            void run() {
                new Request.Builder().build();
            }
        });
        s.add(new Site("okhttp-Request-Builder-ftp") {
            void run() {
                new Request.Builder().url("ftp://example.com/");
            }
        });
        s.add(new Site("okhttp-Request-Builder-get-with-body") {
            void run() {
                new Request.Builder().url("http://example.com/")
                        .method("GET", RequestBody.create(null, "x"));
            }
        });
        s.add(new Site("okhttp-Headers-of-odd") {
            void run() {
                Headers.of("a");
            }
        });
        s.add(new Site("okhttp-Headers-Builder-line") {
            void run() {
                new Headers.Builder().add("no colon");
            }
        });
        s.add(new Site("okhttp-Headers-Builder-bad-name") {
            void run() {
                new Headers.Builder().add("bad name", "v");
            }
        });
        s.add(new Site("okhttp-MediaType-get") {
            void run() {
                MediaType.get("text");
            }
        });
        s.add(new Site("okhttp-MultipartBody-empty") {
            void run() {
                new MultipartBody.Builder().build();
            }
        });
        s.add(new Site("okhttp-MultipartBody-type") {
            void run() {
                new MultipartBody.Builder().setType(MediaType.get("text/plain"));
            }
        });
        s.add(new Site("okhttp-Response-Builder-no-request") {
            void run() {
                new Response.Builder().build();
            }
        });
        s.add(new Site("okhttp-OkHttpClient-Builder-timeout") {
            void run() {
                new OkHttpClient.Builder().connectTimeout(-1, TimeUnit.SECONDS);
            }
        });
        s.add(new Site("okhttp-Dispatcher-maxRequests") {
            void run() {
                new Dispatcher().setMaxRequests(0);
            }
        });
        s.add(new Site("okhttp-CertificatePinner-pin") {
            void run() {
                new CertificatePinner.Builder().add("example.com", "md5/abc");
            }
        });
        s.add(new Site("okhttp-ConnectionPool-keepAlive") {
            void run() {
                new ConnectionPool(1, -1, TimeUnit.SECONDS);
            }
        });
        s.add(new Site("okhttp-Protocol-get") {
            void run() throws IOException {
                Protocol.get("spdy/9");
            }
        });
        s.add(new Site("okhttp-StatusLine-parse") {
            void run() throws IOException {
                StatusLine.parse("HTTP/1.1 abc");
            }
        });
        s.add(new Site("okhttp-RequestBody-create-range") {
            void run() {
                RequestBody.create(null, new byte[2], 1, 5);
            }
        });
        s.add(new Site("okhttp-FormBody-null-name") {
            void run() {
                new FormBody.Builder().add(null, "v");
            }
        });
        s.add(new Site("okhttp-CacheControl-maxAge") {
            void run() {
                new CacheControl.Builder().maxAge(-1, TimeUnit.SECONDS);
            }
        });

        s.add(new Site("okhttp-HttpUrl-addQueryParameter-null") {
            void run() {
                HttpUrl.get("http://example.com/").newBuilder().addQueryParameter(null, "x");
            }
        });
        s.add(new Site("okhttp-Cookie-Builder-no-name") {
            void run() {
                new okhttp3.Cookie.Builder().build();
            }
        });

        // ---------------------------------------------------------------- Okio
        s.add(new Site("okio-Buffer-readByte-empty") {
            void run() {
                new Buffer().readByte();
            }
        });
        s.add(new Site("okio-Buffer-readUtf8-short") {
            void run() throws IOException {
                new Buffer().writeUtf8("ab").readUtf8(5);
            }
        });
        s.add(new Site("okio-ByteString-decodeHex-odd") {
            void run() {
                ByteString.decodeHex("abc");
            }
        });
        s.add(new Site("okio-ByteString-decodeHex-digit") {
            void run() {
                ByteString.decodeHex("a#");
            }
        });
        s.add(new Site("okio-ByteString-substring") {
            void run() {
                ByteString.encodeUtf8("hello").substring(4, 2);
            }
        });
        s.add(new Site("okio-Buffer-writeUtf8-range") {
            void run() {
                new Buffer().writeUtf8("abc", 2, 1);
            }
        });
        s.add(new Site("okio-Buffer-readDecimalLong") {
            void run() {
                new Buffer().writeUtf8("x12").readDecimalLong();
            }
        });
        s.add(new Site("okio-RealBufferedSource-readInt-eof") {
            void run() throws IOException {
                Okio.buffer(Okio.source(new ByteArrayInputStream(new byte[] {1}))).readInt();
            }
        });
        s.add(new Site("okio-GzipSource-not-gzip") {
            void run() throws IOException {
                Okio.buffer(new GzipSource(new Buffer().writeUtf8("not gzip at all"))).readUtf8();
            }
        });
        s.add(new Site("okio-InflaterSource-bad-data-wrapped-in-library") {
            void run() throws IOException {
                Source inflater = new InflaterSource(
                        new Buffer().write(new byte[] {1, 2, 3, 4, 5, 6, 7, 8}), new Inflater());
                inflater.read(new Buffer(), 64);
            }
        });
        s.add(new Site("okio-InflaterSource-driver-helper") {
            void run() throws IOException {
                Parsing.inflateInto(new InflaterSource(
                        new Buffer().write(new byte[] {9, 9, 9, 9}), new Inflater(true)), new Buffer());
            }
        });
        s.add(new Site("okio-Timeout-negative") {
            void run() {
                new Timeout().timeout(-1, TimeUnit.SECONDS);
            }
        });
        s.add(new Site("okio-Pipe-size") {
            void run() {
                new Pipe(0);
            }
        });
        s.add(new Site("okio-Okio-sink-null") {
            void run() {
                Okio.sink((OutputStream) null);
            }
        });
        s.add(new Site("okio-Buffer-getByte") {
            void run() {
                new Buffer().getByte(10);
            }
        });
        s.add(new Site("okio-Buffer-skip-eof") {
            void run() throws IOException {
                new Buffer().writeUtf8("ab").skip(5);
            }
        });
        s.add(new Site("okio-Buffer-readUtf8CodePoint-eof") {
            void run() throws IOException {
                new Buffer().readUtf8CodePoint();
            }
        });
        s.add(new Site("okio-RealBufferedSource-closed") {
            void run() throws IOException {
                BufferedSource src = Okio.buffer((Source) new Buffer().writeUtf8("abc"));
                src.close();
                src.readByte();
            }
        });

        s.add(new Site("okio-RealBufferedSink-closed") {
            void run() throws IOException {
                okio.BufferedSink sink = Okio.buffer(new okio.DeflaterSink(new Buffer(),
                        new java.util.zip.Deflater()));
                sink.close();
                sink.writeUtf8("late");
            }
        });

        // ---------------------------------------------------------------- mixed: causes and suppressed
        s.add(new Site("mixed-okio-cause-wrapped-in-guava-exception") {
            void run() {
                try {
                    new Buffer().writeUtf8("short").readUtf8LineStrict(2);
                } catch (IOException e) {
                    throw new UncheckedExecutionException("line read failed", e);
                }
            }
        });
        s.add(new Site("mixed-okhttp-cause-wrapped-in-VerifyException") {
            void run() {
                try {
                    HttpUrl.get("http://example.com:99999/");
                } catch (IllegalArgumentException e) {
                    throw new VerifyException("url rejected", e);
                }
            }
        });
        s.add(new Site("mixed-two-level-causes") {
            void run() {
                try {
                    try {
                        Preconditions.checkNotNull(null, "thing %s", 3);
                    } catch (NullPointerException e) {
                        throw new IllegalStateException("inner wrap", e);
                    }
                } catch (IllegalStateException e) {
                    throw new ContextedRuntimeException("outer wrap", e).addContextValue("level", 2);
                }
            }
        });
        s.add(new Site("mixed-suppressed") {
            void run() {
                IllegalStateException primary = null;
                try {
                    new Buffer().readByte();
                } catch (IllegalStateException e) {
                    primary = e;
                }
                try {
                    ByteString.decodeHex("xyz");
                } catch (IllegalArgumentException e) {
                    primary.addSuppressed(e);
                }
                try {
                    Validate.notEmpty("", "name must not be empty");
                } catch (IllegalArgumentException e) {
                    primary.addSuppressed(e);
                }
                try {
                    Verify.verifyNotNull(null, "verified %s", "nothing");
                } catch (VerifyException e) {
                    primary.addSuppressed(e);
                }
                try {
                    Okio.buffer((Source) new Buffer()).readUtf8LineStrict();
                } catch (IOException e) {
                    primary.addSuppressed(new IllegalStateException("line missing", e));
                }
                throw primary;
            }
        });
        s.add(new Site("mixed-string-bytes") {
            void run() {
                ByteString.of("hello".getBytes(StandardCharsets.UTF_8), 3, 9);
            }
        });
        return s;
    }
}
