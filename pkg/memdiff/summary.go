package memdiff

import "strconv"

// Summary renders the one-line overview of a memory diff, such as
// "5 commits, 3 files, +14 −2" or "1 commit, 1 file, +1 −0": the number of
// commits and changed files, then the added and deleted line counts. The
// words take the singular for exactly 1 and the plural otherwise ("0
// files"). The deletion count is preceded by the minus sign U+2212, not a
// hyphen, as typeset in the spec's example, so "+14 −2" reads as a pair of
// counts rather than as a range or an option.
func Summary(commits, files, added, deleted int) string {
	return plural(commits, "commit") + ", " + plural(files, "file") +
		", +" + strconv.Itoa(added) + " \u2212" + strconv.Itoa(deleted)
}

// plural formats n with word, adding "s" unless n is 1.
func plural(n int, word string) string {
	if n != 1 {
		word += "s"
	}
	return strconv.Itoa(n) + " " + word
}
