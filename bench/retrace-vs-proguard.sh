#!/usr/bin/env bash
# retrace-vs-proguard.sh BUILD_DIR
#
# Side-by-side benchmark of Beatline's retracer against Debian's ProGuard
# ReTrace 6.2.2 on the same big real mapping and the same 100,000-frame trace:
#   (a) BUILD_DIR/bin/beatline-retrace MAPPING TRACE
#   (b) java -jar /usr/share/java/retrace.jar MAPPING TRACE
# Whole-process wall time (best and median of 5 (RETRACE_BENCH_RUNS) runs each, after
# a warm-up run, one tool then the other) and peak RSS (GNU time), the
# speed-up factors, and sanity checks of the
# outputs: 'at' line counts (at least one per input frame), header / "Caused
# by:" / "... N more" lines all kept, frames still naming an obfuscated class,
# a frame-by-frame comparison of the two tools (on a copy of the trace with a
# marker line after each frame, not timed) and the first lines of each output.
#
# Inputs are made when missing, under BUILD_DIR/bench-data:
#   bench/make-big-mapping.sh BUILD_DIR/bench-data      -> big-mapping.txt
#   bench/make-trace.sh MAPPING 100000 .../trace-100k.txt
# Outputs of the runs go to BUILD_DIR/bench-data/out-*.txt.
#
# Exit status: 0 when both ran and the sanity checks passed, 1 on a failed
# check, 3 when beatline-retrace is not built (ReTrace is still measured).
set -euo pipefail

FRAMES=${RETRACE_BENCH_FRAMES:-100000}
RUNS=${RETRACE_BENCH_RUNS:-5}
RETRACE_JAR=/usr/share/java/retrace.jar

if [ "$#" -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
data="$build/bench-data"
mkdir -p "$data"

note() { echo "retrace-bench: $*" >&2; }

# --- tools ---------------------------------------------------------------------
# scripts/install-deps installs them (it is the only place packages come from)
if ! bash "$here/../scripts/install-deps"; then
  note "scripts/install-deps failed; going on with what is there"
fi
if [ ! -x /usr/bin/time ]; then
  note "GNU time (/usr/bin/time, package 'time') is required"
  exit 1
fi

# --- inputs --------------------------------------------------------------------
"$here/make-big-mapping.sh" "$data"
mapping="$data/big-mapping.txt"
trace="$data/trace-100k.txt"
if [ "$FRAMES" != 100000 ]; then trace="$data/trace-$FRAMES.txt"; fi
if [ ! -s "$trace" ] || [ "$trace" -ot "$mapping" ] || [ "$trace" -ot "$here/make-trace.sh" ]; then
  "$here/make-trace.sh" "$mapping" "$FRAMES" "$trace"
fi

# RETRACE_BENCH_SKEW=1: only the frames whose class is mapped in the first
# half of the mapping's bytes are kept (53,113 of the 100,000) — a trace that
# names one end of the mapping, as a crash inside one library does: the two
# parse threads then get unequal work (the first one done takes over half of
# what the other has left: mapindex_parse.c, "Parallel parse").
if [ "${RETRACE_BENCH_SKEW:-0}" = 1 ]; then
  skew="${trace%.txt}-skew.txt"
  if [ ! -s "$skew" ] || [ "$skew" -ot "$trace" ] || [ "$skew" -ot "${BASH_SOURCE[0]}" ]; then
    LC_ALL=C awk -v half="$(($(stat -c %s "$mapping") / 2))" '
      NR == FNR {
        if (off < half && $0 !~ /^[ \t#]/ && $0 ~ / -> .*:[ \t]*$/) {
          c = substr($0, index($0, " -> ") + 4); sub(/:[ \t]*$/, "", c); first[c] = 1
        }
        off += length($0) + 1
        next
      }
      /^\tat / { c = substr($0, 5); sub(/\(.*/, "", c); sub(/\.[^.]*$/, "", c); if (!(c in first)) next }
      { print }' "$mapping" "$trace" > "$skew.tmp"
    mv "$skew.tmp" "$skew"
  fi
  trace=$skew
fi

beatline="$build/bin/beatline-retrace"
have_beatline=1
if [ ! -x "$beatline" ]; then
  note "$beatline is not built: measuring ReTrace only"
  have_beatline=0
fi

names=()
cmds=()
outs=()
if [ "$have_beatline" -eq 1 ]; then
  names+=("beatline-retrace")
  cmds+=("$(printf '%q %q %q' "$beatline" "$mapping" "$trace")")
  outs+=("$data/out-beatline.txt")
fi
names+=("ProGuard ReTrace 6.2.2")
cmds+=("$(printf 'java -jar %q %q %q' "$RETRACE_JAR" "$mapping" "$trace")")
outs+=("$data/out-proguard-retrace.txt")

# --- one run each: output (for the checks) and peak RSS ------------------------------
rss=()
for i in "${!cmds[@]}"; do
  note "run: ${cmds[$i]}"
  if ! /usr/bin/time -f '%M' -o "$data/rss-$i.txt" bash -c "${cmds[$i]}" > "${outs[$i]}" \
    2> "$data/stderr-$i.txt"; then
    cat "$data/stderr-$i.txt" >&2
    note "${names[$i]} failed"
    exit 1
  fi
  rss+=("$(tail -n 1 "$data/rss-$i.txt")")
done

# --- wall time: best and median of RUNS, each tool after a warm-up run of its own -----
# One tool's runs back to back, then the other's (hyperfine's order). Taking
# turns was tried (2026-12-02) and dropped: a run right after the other tool's
# exit is slower — after a ReTrace run (a JVM of ~1 GB) beatline-retrace took
# 143–152 ms against 118–137 ms back to back — so turns measured the
# neighbour's exit, not the tool. Each command is run directly (no shell in
# between) and timed with bash's EPOCHREALTIME (µs).
# EPOCHREALTIME is written with the locale's decimal separator ("1764…,123456"
# under de_DE), which gawk reads as whole seconds: the separator is dropped
# (it always has six digits after it) and times are kept as integer µs; the
# awk below that prints and divides them runs under LC_ALL=C.
declare -A times
for i in "${!cmds[@]}"; do
  for ((r = 0; r <= RUNS; r++)); do
    t0=${EPOCHREALTIME/[^0-9]/}
    if ! eval "${cmds[$i]}" > /dev/null 2>&1; then
      note "${names[$i]} failed in timing run $r"
      exit 1
    fi
    t1=${EPOCHREALTIME/[^0-9]/}
    if ((r > 0)); then times[$i]+="$((t1 - t0)) "; fi
  done
done
best=()
median=()
for i in "${!cmds[@]}"; do
  best+=("$(echo "${times[$i]-}" | tr ' ' '\n' | awk 'NF' | sort -n |
    LC_ALL=C awk 'NR == 1 { printf "%.3f", $1 / 1e6 }')")
  median+=("$(echo "${times[$i]-}" | tr ' ' '\n' | awk 'NF' | sort -n |
    LC_ALL=C awk '{ v[NR] = $1 } END { if (NR) printf "%.3f", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) / 1e6 }')")
done

# --- table ------------------------------------------------------------------------
msize=$(stat -c %s "$mapping")
tframes=$(grep -c $'^\tat ' "$trace" || true)
# A frame line: 'at ...', or R8-style '<OR> at ...' for an ambiguous alternative.
FRAME_RE='^[[:space:]]+(<OR> )?at '
SHAPE_RE='^([^[:space:]]|[[:space:]]+\.\.\. [0-9]+ more)'
count_at() { grep -cE "$FRAME_RE" "$1" || true; }
echo
echo "mapping: $mapping, $msize bytes ($(((msize + 524288) / 1048576)) MiB)," \
  "$(grep -c '^[^ #]' "$mapping" || true) classes"
echo "trace:   $trace, $tframes frames, $(wc -l < "$trace") lines"
echo
printf '%-24s %16s %14s %16s %14s\n' "tool" "wall best-of-$RUNS" "median" "peak RSS" "'at' lines out"
for i in "${!cmds[@]}"; do
  printf '%-24s %15ss %13ss %13s MiB %14s\n' "${names[$i]}" "${best[$i]}" "${median[$i]}" \
    "$(((rss[i] + 512) / 1024))" "$(count_at "${outs[$i]}")"
done
if [ "$have_beatline" -eq 1 ]; then
  LC_ALL=C awk -v a="${best[0]}" -v b="${best[1]}" -v ma="${median[0]}" -v mb="${median[1]}" \
    -v ra="${rss[0]}" -v rb="${rss[1]}" 'BEGIN {
    printf "%-24s %15.1fx %13.1fx %12.1fx less\n", "speed-up (ReTrace/ours)", (a > 0 ? b / a : 0),
      (ma > 0 ? mb / ma : 0), (ra > 0 ? rb / ra : 0) }'
fi
echo

# --- sanity checks ------------------------------------------------------------------
status=0
# Obfuscated class names of the mapping, to spot frames left obfuscated.
obf="$data/obf-classes.txt"
if [ ! -s "$obf" ] || [ "$obf" -ot "$mapping" ]; then
  awk '/^[^ #]/ { p = index($0, " -> "); if (p) { c = substr($0, p + 4); sub(/:[ \t]*$/, "", c); print c } }' \
    "$mapping" > "$obf"
fi
for i in "${!cmds[@]}"; do
  out=${outs[$i]}
  n=$(count_at "$out")
  # The lines that give the trace its shape (exception headers, "Caused by:",
  # "... N more") must all be there, as many as in the input. (Frame lines and
  # ReTrace's indented lists of alternatives are not counted.)
  nin=$(grep -cE "$SHAPE_RE" "$trace" || true)
  nout=$(grep -cE "$SHAPE_RE" "$out" || true)
  left=$(awk 'NR == FNR { obf[$0] = 1; next }
    /^[ \t]+(<OR> )?at / { s = $0; sub(/^[ \t]+(<OR> )?at /, "", s); sub(/\(.*/, "", s); sub(/\.[^.]*$/, "", s)
                   if (s in obf) n++ }
    END { print n + 0 }' "$obf" "$out")
  echo "${names[$i]}: $n 'at' lines for $tframes input frames; $nout header, 'Caused by' and '... N more' lines" \
    "(input: $nin); $left frames still name an obfuscated class"
  if [ "$n" -lt "$tframes" ]; then
    echo "  CHECK FAILED: fewer 'at' lines than input frames"
    status=1
  fi
  if [ "$nout" -ne "$nin" ]; then
    echo "  CHECK FAILED: non-frame line count differs from the input"
    status=1
  fi
done
if [ "$have_beatline" -eq 1 ]; then
  a=$(count_at "${outs[0]}")
  b=$(count_at "${outs[1]}")
  if [ "$a" -ne "$b" ]; then
    echo "note: 'at' line counts differ ($a vs $b): ReTrace 6.2.2 prints every" \
      "ambiguous candidate on its own line"
  fi

  # Frame-by-frame comparison (not timed): a marker line after every input
  # frame (both tools copy it through) tells which output lines come from
  # which input frame.
  marked="$data/trace-marked.txt"
  awk '{ print } /^\tat / { print "#FRAME " ++n }' "$trace" > "$marked"
  bash -c "$(printf '%q %q %q' "$beatline" "$mapping" "$marked")" > "$data/cmp-beatline.txt" 2> /dev/null
  java -jar "$RETRACE_JAR" "$mapping" "$marked" > "$data/cmp-retrace.txt" 2> /dev/null
  echo
  echo "frame by frame (method names, file and line ignored):"
  awk -v examples="$data/cmp-examples.txt" '
    function meth(l) {
      sub(/^[ \t]+(<OR> )?at /, "", l); sub(/\(.*/, "", l); return l
    }
    FNR == 1 { f++; g = 1 }
    /^#FRAME / { g = $2 + 1; next }
    /^[ \t]+(<OR> )?at / {
      m = meth($0); if (!((f, g, m) in has)) { has[f, g, m] = 1; list[f, g] = list[f, g] " " m }
      if (!((f, g) in first)) first[f, g] = m
      raw[f, g] = raw[f, g] "\n        " $0
      next
    }
    # ReTrace 6.2.2: further candidates on indented lines without "at".
    f == 3 && /^[ \t]+[^ \t.]/ { raw[f, g] = raw[f, g] "\n        " $0; extra[g] = 1 }
    END {
      for (i = 1; i < g; i++) {
        total++
        if (first[2, i] == first[3, i]) samefirst++
        if (first[2, i] == first[1, i] && first[3, i] != first[1, i]) {
          unres++
          if (shown++ < 5) printf "frame %d: input:%s\n  beatline:%s\n  ReTrace:%s\n", i, raw[1, i], raw[2, i], raw[3, i] > examples
        }
        n = split(list[3, i], r, " "); miss = 0
        for (j = 1; j <= n; j++) if (!((2, i, r[j]) in has)) miss = 1
        if (!miss && !(i in extra)) covered++
      }
      printf "  %d frames; same first method: %d (%.1f%%); every ReTrace method also in beatline output: %d (%.1f%%)\n",
        total, samefirst, 100 * samefirst / total, covered, 100 * covered / total
      printf "  frames beatline leaves as they were but ReTrace changes: %d\n", unres
    }' "$marked" "$data/cmp-beatline.txt" "$data/cmp-retrace.txt"
  if [ -s "$data/cmp-examples.txt" ]; then
    echo "  examples (all in $data/cmp-examples.txt):"
    head -n 20 "$data/cmp-examples.txt" | sed 's/^/  /'
  fi
fi
echo
for i in "${!cmds[@]}"; do
  echo "--- sample of ${names[$i]} output (first 5 lines):"
  head -n 5 "${outs[$i]}"
done

if [ "$have_beatline" -eq 0 ]; then
  exit 3
fi
exit "$status"
