package io.beatline.runtime;

/**
 * The {@code launch} event (issue 15; schema/batch-format.md, "Events",
 * event {@code launch}) and its triggered-mode window. Static helpers used
 * by {@link Session}.
 */
final class LaunchEvents {
    /** Longest activity name, bytes (the contract's cap). */
    static final int MAX_ACTIVITY = 512;

    private LaunchEvents() {
    }

    /** µs on the records' clock of a {@code System.nanoTime()} reading (as the dispatch monitor's). */
    static long micros(Clock clock, long nanos) {
        if (clock instanceof NanoClock) {
            return Math.floorDiv(nanos - ((NanoClock) clock).originNanos, 1000L);
        }
        if (clock instanceof TickerClock) {
            return Math.floorDiv(nanos - ((TickerClock) clock).originNanos, 1000L);
        }
        return clock.nowMicros() - Math.floorDiv(System.nanoTime() - nanos, 1000L);
    }

    /**
     * The window segment of a gated session's launch: the main ring's
     * records [pBegin, pEnd), fresh (calls open at the window's begin were
     * not recorded: the server supplies their enters), {@code since_us} =
     * the launch start; as {@link Blocks#window} makes a block's.
     */
    static Recorder.ThreadDump window(Launch.Done d, long startUs, long frameUs) {
        DispatchMonitor.Block b = new DispatchMonitor.Block("launch", "", d.ring, d.pBegin, d.pEnd, startUs, frameUs,
                false, null);
        return Blocks.window(b, false);
    }

    /** The first record time (clock µs, full) of a rebased segment, or Long.MAX_VALUE. */
    static long firstUs(Recorder.ThreadDump t, long origin) {
        long[] rs = t.records;
        return rs.length > t.carried ? origin + (rs[t.carried] & Recorder.T_MASK) : Long.MAX_VALUE;
    }

    /**
     * The event line (ended by {@code \n}) of the contract (notes: the
     * {@code launch} event):
     * {@code {"type":"launch","kind":…,"thread":T,"device":…,"start_us":S,"phases":{…},"first_frame_us":F[,"fully_drawn_us":X][,"activity":…]}}.
     * A phase whose times break the contract's order (begin ≤ end, within
     * [start, first frame]) is left out rather than sent wrong.
     *
     * @param origin the batch's origin, clock µs (all times are made relative to it; start may be negative)
     */
    static String event(Launch.Done d, Clock clock, int thread, long origin, String device) {
        long start = micros(clock, d.startNanos) - origin;
        long frame = micros(clock, d.firstFrameNanos) - origin;
        if (frame < start) {
            frame = start;
        }
        StringBuilder sb = new StringBuilder(384);
        sb.append("{\"type\":\"launch\",\"kind\":\"").append(d.kind).append("\",\"thread\":").append(thread)
                .append(",\"device\":");
        Blocks.str(sb, Blocks.cut(device, 64));
        sb.append(",\"start_us\":").append(start).append(",\"phases\":{");
        boolean first = true;
        for (int h = 1; h < Launch.PHASES.length; h++) {
            String name = Launch.PHASES[h];
            long b = d.phases[h * 2];
            long e = d.phases[h * 2 + 1];
            if (name == null || b == 0 || e == 0) {
                continue;
            }
            long bu = micros(clock, b) - origin;
            long eu = micros(clock, e) - origin;
            if (bu < start || eu < bu || eu > frame) {
                continue;
            }
            if (!first) {
                sb.append(',');
            }
            first = false;
            sb.append('"').append(name).append("\":[").append(bu).append(',').append(eu).append(']');
        }
        sb.append("},\"first_frame_us\":").append(frame);
        if (d.fullyDrawnNanos != 0) {
            sb.append(",\"fully_drawn_us\":").append(Math.max(start, micros(clock, d.fullyDrawnNanos) - origin));
        }
        if (d.activity != null && !d.activity.isEmpty()) {
            sb.append(",\"activity\":");
            Blocks.str(sb, Blocks.cut(d.activity, MAX_ACTIVITY));
        }
        return sb.append("}\n").toString();
    }
}
