// Package gitdelta writes and applies git's delta format (gitformat-pack(5),
// "Deltified representation"): the base and result sizes, then instructions
// that copy a range of the base or insert literal bytes.
//
// Only one way of finding a delta is offered, the common prefix and suffix
// of the two versions: that is exactly what the engine's edits change (a
// tree entry replaced, a bullet appended), it costs a memcmp, and it needs
// no index of the base.
package gitdelta

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// PrefixSuffix encodes new as a delta against old: copy old's common
// prefix, insert the middle, copy old's common suffix. ok is false when the
// insert would be more than half of new: then a delta does not pay.
func PrefixSuffix(old, new []byte) (delta []byte, ok bool) {
	p := commonPrefix(byteSeq{b: old}, byteSeq{b: new})
	s := commonPrefix(reversed(old[p:]), reversed(new[p:]))
	mid := new[p : len(new)-s]
	if len(mid) > len(new)/2 {
		return nil, false
	}
	d := AppendHeader(nil, len(old), len(new))
	d = AppendCopy(d, 0, p)
	d = AppendInsert(d, mid)
	d = AppendCopy(d, len(old)-s, s)
	return d, true
}

// AppendHeader appends a delta's two sizes: its base's and its result's.
func AppendHeader(d []byte, baseSize, resultSize int) []byte {
	d = binary.AppendUvarint(d, uint64(baseSize))
	return binary.AppendUvarint(d, uint64(resultSize))
}

// AppendInsert appends instructions that insert b (127 bytes at most each).
func AppendInsert(d, b []byte) []byte {
	for len(b) > 0 {
		n := min(len(b), 127)
		d = append(d, byte(n))
		d = append(d, b[:n]...)
		b = b[n:]
	}
	return d
}

// AppendCopy appends instructions that copy base[off:off+n], in pieces of
// at most 64 KiB.
func AppendCopy(d []byte, off, n int) []byte {
	for n > 0 {
		size := min(n, 0x10000)
		op := len(d)
		d = append(d, 0x80)
		for i := range 4 {
			if b := byte(off >> (8 * i)); b != 0 {
				d[op] |= 1 << i
				d = append(d, b)
			}
		}
		if size != 0x10000 { // no size bytes means 64 KiB
			for i := range 3 {
				if b := byte(size >> (8 * i)); b != 0 {
					d[op] |= 0x10 << i
					d = append(d, b)
				}
			}
		}
		off += size
		n -= size
	}
	return d
}

// Patch applies delta to base. A result claimed larger than maxSize is
// refused before anything is allocated, so a corrupt delta cannot ask for
// gigabytes.
func Patch(base, delta []byte, maxSize uint64) ([]byte, error) {
	srcSize, delta, err := size(delta)
	if err != nil {
		return nil, err
	}
	if srcSize != uint64(len(base)) {
		return nil, fmt.Errorf("delta base size %d, base is %d", srcSize, len(base))
	}
	dstSize, delta, err := size(delta)
	if err != nil {
		return nil, err
	}
	if dstSize > maxSize {
		return nil, fmt.Errorf("delta result size %d out of range", dstSize)
	}
	out := make([]byte, 0, dstSize)
	for len(delta) > 0 {
		cmd := delta[0]
		delta = delta[1:]
		switch {
		case cmd&0x80 != 0: // copy from the base
			var off, n uint64
			var ok bool
			if off, delta, ok = copyOperand(cmd, 4, delta); !ok {
				return nil, errors.New("truncated copy")
			}
			if n, delta, ok = copyOperand(cmd>>4, 3, delta); !ok {
				return nil, errors.New("truncated copy")
			}
			if n == 0 {
				n = 0x10000
			}
			if off+n > uint64(len(base)) || uint64(len(out))+n > dstSize {
				return nil, errors.New("copy out of range")
			}
			out = append(out, base[off:off+n]...)
		case cmd != 0: // insert cmd literal bytes
			n := int(cmd)
			if n > len(delta) || uint64(len(out)+n) > dstSize {
				return nil, errors.New("insert out of range")
			}
			out = append(out, delta[:n]...)
			delta = delta[n:]
		default:
			return nil, errors.New("reserved delta instruction 0")
		}
	}
	if uint64(len(out)) != dstSize {
		return nil, fmt.Errorf("delta result is %d bytes, header says %d", len(out), dstSize)
	}
	return out, nil
}

// copyOperand reads a copy instruction's offset (bits 0-3 of its command)
// or size (bits 4-6, shifted down): one byte, little end first, for each
// bit of the low `bits` bits of present that is set.
func copyOperand(present byte, bits int, delta []byte) (uint64, []byte, bool) {
	var v uint64
	for i := range bits {
		if present&(1<<i) != 0 {
			if len(delta) == 0 {
				return 0, nil, false
			}
			v |= uint64(delta[0]) << (8 * i)
			delta = delta[1:]
		}
	}
	return v, delta, true
}

// size parses one of a delta's two leading sizes (7 bits a byte, little end
// first).
func size(b []byte) (uint64, []byte, error) {
	var v uint64
	for shift := 0; ; shift += 7 {
		if len(b) == 0 || shift > 63 {
			return 0, nil, errors.New("bad delta size")
		}
		c := b[0]
		b = b[1:]
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, b, nil
		}
	}
}

// commonPrefix is the length of the common prefix of a and b.
func commonPrefix(a, b byteSeq) int {
	n := min(a.len(), b.len())
	i := 0
	for i+8 <= n && a.word(i) == b.word(i) {
		i += 8
	}
	for i < n && a.at(i) == b.at(i) {
		i++
	}
	return i
}

// byteSeq reads a byte slice forwards or backwards.
type byteSeq struct {
	b   []byte
	rev bool
}

func reversed(b []byte) byteSeq { return byteSeq{b: b, rev: true} }

func (s byteSeq) len() int { return len(s.b) }

func (s byteSeq) at(i int) byte {
	if s.rev {
		return s.b[len(s.b)-1-i]
	}
	return s.b[i]
}

// word returns bytes i..i+7 (in reading order) as one comparable value.
func (s byteSeq) word(i int) uint64 {
	if s.rev {
		return binary.LittleEndian.Uint64(s.b[len(s.b)-8-i:])
	}
	return binary.LittleEndian.Uint64(s.b[i:])
}
