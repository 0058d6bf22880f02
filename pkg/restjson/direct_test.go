package restjson

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// The direct encoder writes exactly what protojson and the enum rewrite
// wrote: every message of the API, filled at random (unset fields, oneofs,
// proto3 optionals, undeclared enum numbers, escapes, Unicode, 64-bit and
// special floats, timestamps and durations at their edges), encodes to the
// same bytes both ways, or — where the direct encoder declines — Marshal
// gives the old answer, error included.
func TestDirectIsTheOldEncoding(t *testing.T) {
	m := &Marshaler{MarshalOptions: protojson.MarshalOptions{EmitUnpopulated: true}}
	require.True(t, directOptions(m.MarshalOptions))
	var messages []protoreflect.MessageDescriptor
	protoregistry.GlobalFiles.RangeFilesByPackage("gardenbloom.memory.v1", func(fd protoreflect.FileDescriptor) bool {
		collectMessages(fd.Messages(), &messages)
		return true
	})
	require.Greater(t, len(messages), 100, "the API's messages")

	r := rand.New(rand.NewPCG(1, 2))
	direct, declined := 0, 0
	for _, md := range messages {
		for range 60 {
			msg := dynamicpb.NewMessage(md)
			fill(r, msg, 0)
			want, wantErr := m.marshalIndirect(msg)
			got, err := appendDirect(nil, msg)
			if err != nil {
				declined++
				require.True(t, planFor(md) == nil || wantErr != nil,
					"%s: declined (%v) what the old way writes: %s", md.FullName(), err, want)
				got, err = m.Marshal(msg)
				require.Equal(t, wantErr, err, "%s", md.FullName())
				require.Equal(t, string(want), string(got), "%s", md.FullName())
				continue
			}
			direct++
			require.NoError(t, wantErr, "%s: the old way refused what the direct one wrote: %s", md.FullName(), got)
			require.Equal(t, string(want), string(got), "%s", md.FullName())
		}
	}
	t.Logf("%d messages written directly, %d declined (invalid UTF-8, timestamps out of range, types not planned)", direct, declined)
	var indirect []protoreflect.FullName
	for _, md := range messages {
		if planFor(md) == nil {
			indirect = append(indirect, md.FullName())
		}
	}
	t.Logf("written the old way: %v", indirect)
	require.Less(t, len(indirect), len(messages)/10, "nearly every message is written directly")

	// The answers the REST edge serves most are written directly.
	for _, msg := range []protoreflect.ProtoMessage{&memoryv1.ReadMemoryResponse{}, &memoryv1.AssembleContextResponse{},
		&memoryv1.SearchResponse{}, &memoryv1.GetEntityResponse{}, &memoryv1.ProposeResponse{}, &memoryv1.Proposal{}} {
		require.NotNil(t, planFor(msg.ProtoReflect().Descriptor()), "%T", msg)
	}
}

func collectMessages(mds protoreflect.MessageDescriptors, out *[]protoreflect.MessageDescriptor) {
	for i := range mds.Len() {
		md := mds.Get(i)
		if md.IsMapEntry() {
			continue
		}
		*out = append(*out, md)
		collectMessages(md.Messages(), out)
	}
}

// strs are strings that need every kind of care.
var strs = []string{"", "plain", `quote " and \ backslash`, "line\nbreak\ttab\r\b\f", "\x00\x01\x1f\x7f",
	"ünïcødé — “quotes” 🌱", "\u2028\u2029", "\uFFFD valid replacement", "<html> & 'single'", "bad \xff utf-8"}

// fill sets some of msg's fields at random.
func fill(r *rand.Rand, msg protoreflect.Message, depth int) {
	fds := msg.Descriptor().Fields()
	switch msg.Descriptor().FullName() {
	case timestampName, durationName:
		secs := []int64{0, 1, -1, 1764201600, minTimestampSeconds, maxTimestampSeconds, maxTimestampSeconds + 1, -maxSecondsInDuration}[r.IntN(8)]
		nanos := []int64{0, 5, 123000, 1e6, 999999999, -1, -5000}[r.IntN(7)]
		msg.Set(fds.ByNumber(1), protoreflect.ValueOfInt64(secs))
		msg.Set(fds.ByNumber(2), protoreflect.ValueOfInt32(int32(nanos)))
		return
	}
	for i := range fds.Len() {
		fd := fds.Get(i)
		if r.IntN(3) == 0 {
			continue
		}
		switch {
		case fd.IsList():
			l := msg.Mutable(fd).List()
			for range r.IntN(4) {
				l.Append(value(r, msg, fd, depth, func() protoreflect.Value { return l.NewElement() }))
			}
		case fd.IsMap():
			mp := msg.Mutable(fd).Map()
			for range r.IntN(4) {
				k := value(r, msg, fd.MapKey(), depth, nil).MapKey()
				mp.Set(k, value(r, msg, fd.MapValue(), depth, func() protoreflect.Value { return mp.NewValue() }))
			}
		case fd.Message() != nil:
			if depth < 3 {
				sub := msg.Mutable(fd).Message()
				fill(r, sub, depth+1)
			}
		default:
			msg.Set(fd, value(r, msg, fd, depth, nil))
		}
	}
}

func value(r *rand.Rand, msg protoreflect.Message, fd protoreflect.FieldDescriptor, depth int, newMsg func() protoreflect.Value) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(r.IntN(2) == 0)
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(strs[r.IntN(len(strs))])
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte(strs[r.IntN(len(strs))]))
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32([]int32{0, 1, -1, math.MaxInt32, math.MinInt32, 42}[r.IntN(6)])
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32([]uint32{0, 1, math.MaxUint32, 7}[r.IntN(4)])
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64([]int64{0, 1, -1, math.MaxInt64, math.MinInt64, 1 << 53}[r.IntN(6)])
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64([]uint64{0, 1, math.MaxUint64}[r.IntN(3)])
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32([]float32{0, 1.5, -0.25, 1e-7, 3e21, float32(math.Inf(1)), float32(math.NaN()), 0.1}[r.IntN(8)])
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64([]float64{0, 1.5, -0.25, 1e-7, 3e21, math.Inf(-1), math.NaN(), 0.1, 12.345678901234567}[r.IntN(9)])
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		if r.IntN(8) == 0 {
			return protoreflect.ValueOfEnum(99) // undeclared
		}
		return protoreflect.ValueOfEnum(vals.Get(r.IntN(vals.Len())).Number())
	case protoreflect.MessageKind:
		v := newMsg()
		if depth < 3 {
			fill(r, v.Message(), depth+1)
		}
		return v
	}
	panic(fd.Kind().String())
}

// BenchmarkMarshalReadMemory: a basic read of an agent near its Layer 1
// limits (three files, ~23 KB of JSON, each file twice: content and
// files), the old way and directly.
func BenchmarkMarshalReadMemory(b *testing.B) {
	line := "- The backups service keeps three replicas in two regions; restore drills run monthly (see [[runbook:restore]])\n"
	text := func(n int) string {
		s := ""
		for len(s) < n {
			s += line
		}
		return s
	}
	files := map[string]string{"snapshot.md": text(2000), "facts.md": text(6000), "open_loops.md": text(2000)}
	resp := &memoryv1.ReadMemoryResponse{AgentId: "agent-0001", Version: 3, Commit: "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
		Mode: memoryv1.ReadMode_READ_MODE_BASIC, TokenCount: 2500, Content: files, Meta: &memoryv1.MemoryMeta{}}
	for name, content := range files {
		resp.Files = append(resp.Files, &memoryv1.FileContent{File: name, Content: content, TokenCount: 500, Layer: 1})
	}
	m := &Marshaler{MarshalOptions: protojson.MarshalOptions{EmitUnpopulated: true}}
	b.Run("protojson+rewrite", func(b *testing.B) {
		for b.Loop() {
			if _, err := m.marshalIndirect(resp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if _, err := m.Marshal(resp); err != nil {
				b.Fatal(err)
			}
		}
	})
}
