package textanalysis

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStemSlavicRules pins the examples quoted in stem_slavic.go's comments,
// so the documentation cannot drift from the code. Inputs are normalised
// (lowercase, no apostrophe), as stemSlavic receives them.
func TestStemSlavicRules(t *testing.T) {
	cases := map[string]string{
		// step 1: -ість
		"радість": "радост", "радості": "радост", "радістю": "радост",
		// step 2 + 3: reflexive, then an ending
		"зберігається": "зберіга", "зберігаються": "зберіга",
		// step 3: fallback to a shorter ending when the longer leaves < 3
		"слові": "сло",
		// step 3: conditional endings
		"систему": "систем", "хорошему": "хорош", "систем": "систем",
		"вчителем": "вчите", "читаем": "чита",
		// step 4: undoubling, ь, final т/л/в after a vowel, -ува-
		"рішення": "рішен", "рішень": "рішен", "памяттю": "памя",
		"читати": "чита", "читать": "чита", "читав": "чита", "читала": "чита",
		"читає": "чита", "читает": "чита",
		"результати": "результа", "результатів": "результа",
		"память": "памя", "памяти": "памя", "памятью": "памя",
		"використовувати": "використову", "використовує": "використову",
		"использовать": "использу", "использует": "использу",
		// too short or no vowel: untouched
		"ми": "ми", "жт": "жт", "бвгд": "бвгд", "дати": "дат", "дата": "дат",
	}
	for in, want := range cases {
		require.Equal(t, want, string(stemSlavic([]rune(in))), in)
	}
}

func TestStemSlavicDoesNotModifyInput(t *testing.T) {
	for _, w := range []string{"використовувати", "радість", "рішення", "зберігається"} {
		in := []rune(w)
		stemSlavic(in)
		require.Equal(t, w, string(in))
	}
}

func TestEndingTableSortedLongestFirst(t *testing.T) {
	for i := 1; i < len(slavicEndings); i++ {
		require.GreaterOrEqual(t, len(slavicEndings[i-1].suffix), len(slavicEndings[i].suffix))
	}
}
