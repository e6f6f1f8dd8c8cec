package io.beatline.runtime;

import java.awt.AWTEvent;
import java.awt.EventQueue;
import java.awt.Toolkit;
import java.awt.event.InvocationEvent;
import java.lang.reflect.Field;

/**
 * The desktop hook of the {@link DispatchMonitor} ({@code -Dbeatline.dispatch=awt}
 * / {@code BEATLINE_DISPATCH=awt}): an {@link EventQueue} pushed on the
 * system event queue ({@code Toolkit.getSystemEventQueue().push}) whose
 * {@link #dispatchEvent} times each event. The event dispatch thread is then
 * the batches' main thread. Works headless ({@code java.awt.headless=true}):
 * {@code EventQueue.invokeLater} events are dispatched all the same.
 *
 * <p>Target of a block: {@code "<event class>/<source class>"}; for an
 * {@link InvocationEvent} (invokeLater/invokeAndWait) the source is the
 * runnable, read from the event's private {@code runnable} field when the
 * JDK lets it be read (else the event's source).
 */
final class AwtDispatch extends EventQueue {
    private final DispatchMonitor monitor;

    private AwtDispatch(DispatchMonitor monitor) {
        this.monitor = monitor;
    }

    /** Namer of AWT events (see the class comment). */
    static final DispatchMonitor.Namer NAMER = new DispatchMonitor.Namer() {
        @Override
        public String target(Object what) {
            if (!(what instanceof AWTEvent)) {
                return String.valueOf(what);
            }
            AWTEvent e = (AWTEvent) what;
            Object src = e.getSource();
            if (e instanceof InvocationEvent) {
                Object r = runnable((InvocationEvent) e);
                if (r != null) {
                    src = r;
                }
            }
            String srcName = src == null ? "null" : src.getClass().getName();
            if (e instanceof InvocationEvent && src == e.getSource()) {
                String r = fromParamString(((InvocationEvent) e).paramString());
                if (r != null) {
                    srcName = r;
                }
            }
            return e.getClass().getName() + "/" + stable(srcName);
        }
    };

    /**
     * The runnable's class from {@code InvocationEvent.paramString()}
     * ({@code "INVOCATION_DEFAULT,runnable=com.example.Main$1@1b2c,notifier=…"}):
     * the public way to it where the private field cannot be read (JDK 16+
     * without {@code --add-opens java.desktop/java.awt.event=ALL-UNNAMED}).
     */
    static String fromParamString(String ps) {
        if (ps == null) {
            return null;
        }
        int i = ps.indexOf("runnable=");
        if (i < 0) {
            return null;
        }
        int j = ps.indexOf(",notifier=", i);
        String r = ps.substring(i + 9, j < 0 ? ps.length() : j);
        int at = r.lastIndexOf('@');
        if (at > 0) {
            r = r.substring(0, at);
        }
        return r.isEmpty() || r.equals("null") ? null : r;
    }

    /**
     * A class name that is the same in every run: a lambda's
     * {@code Main$$Lambda$14/0x0000000800c03000} becomes {@code Main$$Lambda}.
     */
    static String stable(String cls) {
        int l = cls.indexOf("$$Lambda");
        return l >= 0 ? cls.substring(0, l + 8) : cls;
    }

    private static volatile Field runnableField;
    private static volatile boolean noField;

    private static Object runnable(InvocationEvent e) {
        if (noField) {
            return null;
        }
        try {
            Field f = runnableField;
            if (f == null) {
                f = InvocationEvent.class.getDeclaredField("runnable");
                f.setAccessible(true); // java.desktop is open to the unnamed module on JDK 8-16; else caught below
                runnableField = f;
            }
            return f.get(e);
        } catch (Throwable t) {
            noField = true;
            return null;
        }
    }

    /**
     * Pushes the timing queue on the system event queue.
     *
     * @return false when AWT is not available (logged by the caller)
     */
    static boolean install(DispatchMonitor monitor) {
        Toolkit.getDefaultToolkit().getSystemEventQueue().push(new AwtDispatch(monitor));
        return true;
    }

    @Override
    protected void dispatchEvent(AWTEvent event) {
        monitor.begin(event);
        try {
            super.dispatchEvent(event);
        } finally {
            monitor.end();
        }
    }
}
