package io.beatline.runtime.net;

/** Byte counts of header text (JDK types only: {@link UrlTiming} runs without OkHttp). */
final class Text {
    private Text() {
    }

    /** UTF-8 bytes of s (header text is ASCII in practice). */
    static int utf8Len(String s) {
        int n = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            n += c < 0x80 ? 1 : c < 0x800 ? 2 : Character.isSurrogate(c) ? 2 : 3;
        }
        return n;
    }
}
