package segment

import (
	"fmt"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// One zstd encoder and decoder for the process: EncodeAll and DecodeAll are
// safe for concurrent use and keep their own pools.
var (
	zstdOnce sync.Once
	zstdEnc  *zstd.Encoder
	zstdDec  *zstd.Decoder
)

func zstdInit() {
	zstdOnce.Do(func() {
		var err error
		zstdEnc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithEncoderCRC(false), zstd.WithZeroFrames(true))
		if err != nil {
			panic(err) // only bad options get here
		}
		zstdDec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderMaxMemory(MaxSegmentBytes), zstd.IgnoreChecksum(true))
		if err != nil {
			panic(err)
		}
	})
}

// compress appends the compressed form of raw to dst using c.
func compress(dst, raw []byte, c Codec) []byte {
	switch c {
	case CodecS2:
		need := s2.MaxEncodedLen(len(raw))
		if need < 0 {
			return nil
		}
		dst = grow(dst, need)
		out := s2.Encode(dst[len(dst):len(dst)+need], raw)
		return dst[:len(dst)+len(out)]
	case CodecZstd:
		zstdInit()
		return zstdEnc.EncodeAll(raw, dst)
	}
	return append(dst, raw...)
}

// decompress decodes stored (codec c) into dst[:rawLen], which must have that capacity.
func decompress(dst, stored []byte, c Codec, rawLen int) ([]byte, error) {
	switch c {
	case CodecS2:
		n, err := s2.DecodedLen(stored)
		if err != nil || n != rawLen {
			return nil, fmt.Errorf("s2 block: decoded length %d, header says %d (%v)", n, rawLen, err)
		}
		out, err := s2.Decode(dst[:rawLen], stored)
		if err != nil {
			return nil, fmt.Errorf("s2 block: %w", err)
		}
		return out, nil
	case CodecZstd:
		zstdInit()
		out, err := zstdDec.DecodeAll(stored, dst[:0:rawLen])
		if err != nil {
			return nil, fmt.Errorf("zstd block: %w", err)
		}
		if len(out) != rawLen {
			return nil, fmt.Errorf("zstd block: decoded %d bytes, header says %d", len(out), rawLen)
		}
		return out, nil
	}
	return stored, nil
}

// grow makes room for n more bytes after len(b).
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	nb := make([]byte, len(b), 2*cap(b)+n)
	copy(nb, b)
	return nb
}
