package io.beatline.runtime;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A minimal JSON reader for the tests (RFC 8259 subset the server writes):
 * objects become {@code Map<String, Object>} (key order kept), arrays
 * {@code List<Object>}, numbers {@code Long} (or {@code Double} with a
 * fraction or exponent), strings, booleans, null. Throws
 * IllegalArgumentException with the offset on bad input.
 */
final class Json {
    private final String s;
    private int p;

    private Json(String s) {
        this.s = s;
    }

    static Object parse(String text) {
        Json j = new Json(text);
        Object v = j.value();
        j.ws();
        if (j.p != text.length()) {
            throw j.err("trailing text");
        }
        return v;
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> obj(Object o) {
        return (Map<String, Object>) o;
    }

    @SuppressWarnings("unchecked")
    static List<Object> arr(Object o) {
        return (List<Object>) o;
    }

    private IllegalArgumentException err(String what) {
        return new IllegalArgumentException("JSON offset " + p + ": " + what);
    }

    private void ws() {
        while (p < s.length() && " \t\r\n".indexOf(s.charAt(p)) >= 0) {
            p++;
        }
    }

    private Object value() {
        ws();
        if (p >= s.length()) {
            throw err("unexpected end");
        }
        char c = s.charAt(p);
        if (c == '{') {
            Map<String, Object> m = new LinkedHashMap<>();
            p++;
            ws();
            if (s.charAt(p) == '}') {
                p++;
                return m;
            }
            while (true) {
                ws();
                String k = string();
                ws();
                expect(':');
                m.put(k, value());
                ws();
                if (s.charAt(p) == ',') {
                    p++;
                    continue;
                }
                expect('}');
                return m;
            }
        }
        if (c == '[') {
            List<Object> l = new ArrayList<>();
            p++;
            ws();
            if (s.charAt(p) == ']') {
                p++;
                return l;
            }
            while (true) {
                l.add(value());
                ws();
                if (s.charAt(p) == ',') {
                    p++;
                    continue;
                }
                expect(']');
                return l;
            }
        }
        if (c == '"') {
            return string();
        }
        for (String w : new String[] {"true", "false", "null"}) {
            if (s.startsWith(w, p)) {
                p += w.length();
                return w.equals("null") ? null : Boolean.valueOf(w);
            }
        }
        int start = p;
        while (p < s.length() && "+-0123456789.eE".indexOf(s.charAt(p)) >= 0) {
            p++;
        }
        String num = s.substring(start, p);
        if (num.isEmpty()) {
            throw err("unexpected '" + c + "'");
        }
        return num.matches("-?\\d+") ? (Object) Long.valueOf(num) : (Object) Double.valueOf(num);
    }

    private void expect(char c) {
        if (p >= s.length() || s.charAt(p) != c) {
            throw err("expected '" + c + "'");
        }
        p++;
    }

    private String string() {
        expect('"');
        StringBuilder b = new StringBuilder();
        while (true) {
            if (p >= s.length()) {
                throw err("unterminated string");
            }
            char c = s.charAt(p++);
            if (c == '"') {
                return b.toString();
            }
            if (c != '\\') {
                b.append(c);
                continue;
            }
            char e = s.charAt(p++);
            switch (e) {
                case 'n': b.append('\n'); break;
                case 't': b.append('\t'); break;
                case 'r': b.append('\r'); break;
                case 'b': b.append('\b'); break;
                case 'f': b.append('\f'); break;
                case 'u': b.append((char) Integer.parseInt(s.substring(p, p + 4), 16)); p += 4; break;
                default: b.append(e);
            }
        }
    }
}
