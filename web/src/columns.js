// GET call-tree?format=columns-binary (docs/api.md) read into the shape of
// format=columns: the head's fields, and each column as a typed array over
// the answer's bytes (no copy, no text to parse per node).
//   "BLCB", head length (u32 LE), head JSON, zeros to 8; then each column:
//   `nodes` values (i32 / u32 / f64, little-endian), zeros to 8.
const TYPES = { i32: Int32Array, u32: Uint32Array, f64: Float64Array };
const align8 = (n) => Math.ceil(n / 8) * 8;

export function decodeColumns(buf) {
  const dv = new DataView(buf);
  if (buf.byteLength < 8 || dv.getUint32(0, false) !== 0x424c4342) throw new Error('call tree: not a columns-binary answer'); // "BLCB"
  const len = dv.getUint32(4, true);
  if (8 + len > buf.byteLength) throw new Error('call tree: head cut short');
  const head = JSON.parse(new TextDecoder().decode(new Uint8Array(buf, 8, len)));
  const n = head.nodes | 0;
  let off = align8(8 + len);
  for (const [name, type] of head.columns || []) {
    const T = TYPES[type];
    if (!T || off + n * T.BYTES_PER_ELEMENT > buf.byteLength) throw new Error(`call tree: column ${name} (${type}) cut short`);
    // typed arrays are little-endian on every platform the dashboard targets
    head[name] = new T(buf, off, n);
    off = align8(off + n * T.BYTES_PER_ELEMENT);
  }
  return head;
}
