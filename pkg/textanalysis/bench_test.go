package textanalysis

import "testing"

// benchText is a ~1 KB paragraph mixing English, Ukrainian and Russian, the
// shape of a typical agent memory note.
var benchText = `Decision log 2026-02-17: the agent's memories are indexed with BM25; studies of
retrieval show that running inflected queries against stemmed terms improves recall.
Агент зберігає факти про рішення користувача в пам’яті, а також історію запитів і
результати тестування моделей. Рішенням команди було використовувати легкий стемер
для української мови. Агент хранит факты о решениях пользователя в памяти и
использует их при ответах на вопросы. Run run_abc123 finished with v1.2 of the
analyzer; the generalization of the approach activated further experiments.
Користувачі очікують, що пошук знаходить слова в різних відмінках: фактів, фактами,
рішень, рішеннями. Пользователи ожидают, что поиск находит решения и решениями.`

func BenchmarkAnalyze(b *testing.B) {
	b.SetBytes(int64(len(benchText)))
	b.ReportAllocs()
	for b.Loop() {
		Analyze(benchText)
	}
}
