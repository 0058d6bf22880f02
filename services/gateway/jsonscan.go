package gateway

// jsonTooDeep reports whether the JSON text b nests objects and arrays more
// than max levels deep. It runs before any decoding, so a hostile body costs
// one linear pass without allocations: it only counts brackets outside
// string literals (honouring backslash escapes) and leaves every other
// question of well-formedness to the decoder.
func jsonTooDeep(b []byte, max int) bool {
	depth := 0
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++ // the escaped byte cannot end the string; \uXXXX digits are harmless
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > max {
				return true
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return false
}
