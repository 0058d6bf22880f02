package textanalysis

// questionWords frame a question without naming its content:
// interrogatives, auxiliary and modal verbs, personal and possessive
// pronouns, in English, Ukrainian and Russian (normalised form). A query
// drops them (NewQueryAnalyzer); documents keep them. In a conversation
// every other turn is a question, so these words match turns that share
// nothing else with the one asked.
//
// Left out on purpose: words that carry time, order or negation (after,
// before, again, first, never, not) and words that are also names or
// nouns in agent memory ("us" — the US; "may" — the month; "done").
var questionWords = wordSet(
	// English interrogatives
	"what", "which", "who", "whom", "whose", "when", "where", "why", "how",
	// English auxiliaries and modals
	"do", "does", "did", "have", "has", "had", "having", "am", "were", "been", "being",
	"would", "could", "should", "might", "must", "can", "shall",
	// English personal and possessive pronouns, demonstratives
	"i", "me", "my", "mine", "myself", "we", "our", "ours", "ourselves",
	"you", "your", "yours", "yourself", "yourselves",
	"he", "him", "his", "himself", "she", "her", "hers", "herself", "its", "itself",
	"them", "theirs", "themselves", "those",

	// Ukrainian interrogatives
	"хто", "кого", "кому", "ким", "який", "яка", "яке", "які", "якого", "якій", "яким",
	"де", "куди", "звідки", "чому", "навіщо", "скільки",
	// Ukrainian modals
	"може", "можна", "міг", "могла", "могли",
	// Ukrainian pronouns
	"я", "мене", "мені", "мною", "мій", "моя", "моє", "мої",
	"ми", "нас", "нам", "нами", "наш", "наша", "наше", "наші",
	"ти", "тебе", "тобі", "тобою", "твій", "твоя", "твоє", "твої",
	"ви", "вас", "вам", "вами", "ваш", "ваша", "ваше", "ваші",
	"йому", "їй", "ним", "нею", "ними", "них",

	// Russian interrogatives
	"кто", "кем", "какой", "какая", "какое", "какие", "какого", "каким",
	"где", "куда", "откуда", "почему", "зачем", "сколько",
	// Russian modals
	"может", "можно", "мог",
	// Russian pronouns
	"меня", "мне", "мной", "мой", "мое", "мои",
	"мы", "наш", "наши",
	"ты", "тебя", "тебе", "тобой", "твой", "твоя", "твое", "твои",
	"вы", "ваш", "ваши",
	"ему", "ей", "ней",
)

// wordSet is a set of normalised words.
func wordSet(words ...string) map[string]struct{} {
	m := make(map[string]struct{}, len(words))
	for _, w := range words {
		m[w] = struct{}{}
	}
	return m
}
