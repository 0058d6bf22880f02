package memrepo

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrInvalidPath reports a repository path that CheckPath rejects, or one
// that conflicts with the tree it is applied to (a file where a directory is
// needed or the other way round). Callers should test for it with errors.Is.
var ErrInvalidPath = errors.New("memrepo: invalid path")

// CheckPath returns nil if p is an acceptable file path inside the memory
// monorepo and otherwise an error wrapping ErrInvalidPath that explains why.
//
// A path is relative to the repository root and '/'-separated. It must be
// valid UTF-8 and contain no NUL, backslash or other control character
// (backslashes are separators on Windows checkouts; control characters
// break line-oriented tools such as `git log --name-only`). It must not be
// absolute or have empty, "." or ".." segments, and no segment may be one
// git treats specially: ".git" or anything starting with ".git"
// (.gitmodules, .gitattributes, ...), compared the way git does on
// case-insensitive macOS and Windows checkouts (see reservedGitName). Such
// names could make a clone do more than check out Markdown, and `git fsck
// --strict` validates the contents of .gitmodules and .gitattributes, so an
// agent could otherwise make the repository fail fsck.
func CheckPath(p string) error {
	if err := checkPath(p); err != nil {
		return fmt.Errorf("%w %q: %w", ErrInvalidPath, p, err)
	}
	return nil
}

type pathError string

func (e pathError) Error() string { return string(e) }

func checkPath(p string) error {
	switch {
	case p == "":
		return pathError("empty")
	case !utf8.ValidString(p):
		return pathError("not valid UTF-8")
	case strings.HasPrefix(p, "/"):
		return pathError("absolute")
	}
	for _, c := range p {
		switch {
		case c == 0:
			return pathError("contains NUL")
		case c == '\\':
			return pathError("contains a backslash")
		case c < 0x20 || c == 0x7f:
			return pathError("contains a control character")
		}
	}
	for seg := range strings.SplitSeq(p, "/") {
		switch {
		case seg == "":
			return pathError("empty segment")
		case seg == "." || seg == "..":
			return pathError("contains a " + seg + " segment")
		case reservedGitName(seg):
			return pathError("segment " + fmt.Sprintf("%q", seg) + " is reserved by git")
		}
	}
	return nil
}

// reservedGitName reports whether a path segment names, or may be taken for,
// one of git's own files. Like git's verify_path/fsck (is_hfs_dotgit,
// is_ntfs_dotgit) it compares case-insensitively, ignores the Unicode
// code points HFS+ drops from names and the trailing dots and spaces NTFS
// drops, and covers NTFS 8.3 short names ("git~1", "gitmod~1", "gi7eba~1").
// Anything starting with ".git" is refused, not just git's exact names:
// this also rejects harmless names such as ".github", which memory never
// needs, in exchange for a rule that is easy to state and audit.
func reservedGitName(seg string) bool {
	var b strings.Builder
	for _, c := range seg {
		if hfsIgnorable(c) {
			continue
		}
		b.WriteRune(c)
	}
	n := strings.ToLower(strings.TrimRight(b.String(), ". "))
	if strings.HasPrefix(n, ".git") {
		return true
	}
	for _, short := range ntfsShortNames {
		if rest, ok := strings.CutPrefix(n, short); ok && len(rest) == 1 && rest[0] >= '1' && rest[0] <= '9' {
			return true
		}
	}
	return false
}

// ntfsShortNames are the 8.3 names (without the digit) under which NTFS may
// expose .git, .gitmodules, .gitattributes and .gitignore; git checks the
// same forms (is_ntfs_dotgit, is_ntfs_dot_generic).
var ntfsShortNames = []string{
	"git~",
	"gitmod~", "gi7eba~",
	"gitatt~", "gi7d29~",
	"gitign~", "gi250a~",
}

// hfsIgnorable lists the code points HFS+ ignores in file names (the same
// list as git's next_hfs_char).
func hfsIgnorable(c rune) bool {
	switch {
	case c >= 0x200c && c <= 0x200f, // zero-width (non-)joiners, LRM, RLM
		c >= 0x202a && c <= 0x202e, // bidi embedding and overrides
		c >= 0x206a && c <= 0x206f, // deprecated format characters
		c == 0xfeff:                // zero-width no-break space
		return true
	}
	return false
}
