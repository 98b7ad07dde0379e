// SPDX-License-Identifier: Apache-2.0

package device

// COBS (Consistent Overhead Byte Stuffing, Cheshire & Baker 1999) with
// blocks of at most 254 data bytes. The encoded form holds no 0x00, so 0x00
// can delimit frames on the wire.

// appendCOBS appends the COBS encoding of src to dst. A block that ends
// exactly at the end of src gets no extra trailing 0x01 code (the usual
// minimal form); decodeCOBS accepts both forms.
func appendCOBS(dst, src []byte) []byte {
	codeAt := len(dst)
	dst = append(dst, 0)
	code := byte(1)
	for i, b := range src {
		if b != 0 {
			dst = append(dst, b)
			code++
		}
		if b == 0 || code == 0xFF {
			dst[codeAt] = code
			code = 1
			codeAt = len(dst)
			if b == 0 || i < len(src)-1 {
				dst = append(dst, 0)
			}
		}
	}
	if codeAt < len(dst) {
		dst[codeAt] = code
	}
	return dst
}

// decodeCOBS appends the decoding of src (one segment, without delimiters)
// to dst. It reports false when src is not a valid COBS encoding.
func decodeCOBS(dst, src []byte) ([]byte, bool) {
	for i := 0; i < len(src); {
		code := src[i]
		if code == 0 {
			return dst, false
		}
		i++
		n := int(code) - 1
		if i+n > len(src) {
			return dst, false
		}
		for _, b := range src[i : i+n] {
			if b == 0 {
				return dst, false
			}
		}
		dst = append(dst, src[i:i+n]...)
		i += n
		if code != 0xFF && i < len(src) {
			dst = append(dst, 0)
		}
	}
	return dst, true
}
