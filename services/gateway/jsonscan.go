package gateway

// scanJSON makes one pass over the JSON text b, before any decoding, so a
// hostile body costs one linear pass without allocations. It reports
// whether objects and arrays nest more than max levels deep, and whether
// anything but white space follows the first top-level object or array
// (the decoder reads only the first value, so the rest would be silently
// ignored, and the edge's own checks of the body skipped). It only counts
// brackets outside string literals (honouring backslash escapes) and
// leaves every other question of well-formedness to the decoder.
func scanJSON(b []byte, max int) (tooDeep, trailing bool) {
	depth := 0
	inString, closed := false, false
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
		if closed {
			if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
				return false, true
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > max {
				return true, false
			}
		case '}', ']':
			if depth > 0 {
				depth--
				closed = depth == 0
			}
		}
	}
	return false, false
}
