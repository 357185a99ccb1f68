package subjects

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxBranchBytes is the longest branch name ValidBranch accepts, in bytes.
const MaxBranchBytes = 255

// ErrInvalidBranch is wrapped by every branch-name validation error.
var ErrInvalidBranch = errors.New("invalid branch name")

// ValidBranch checks a branch name (the part after refs/heads/) by the rules of
// `git check-ref-format --branch`, without calling git:
//
//   - not empty, not starting with '-', not "HEAD";
//   - no component (between slashes) empty, starting with '.' or ending with
//     ".lock"; no leading or trailing '/', no trailing '.';
//   - no "..", no "@{", no ASCII control character, space, '~', '^', ':', '?',
//     '*', '[' or '\'.
//
// It is stricter than git in three ways, so that a name is also safe in JSON,
// a header and a shell-free argv: the name "@" alone (git reads it as HEAD) is
// refused, the name must be valid UTF-8, and it is at most MaxBranchBytes.
func ValidBranch(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidBranch)
	case len(name) > MaxBranchBytes:
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrInvalidBranch, len(name), MaxBranchBytes)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidBranch)
	case name[0] == '-':
		return fmt.Errorf("%w: %.40q starts with '-'", ErrInvalidBranch, name)
	case name == "HEAD" || name == "@":
		return fmt.Errorf("%w: %q is reserved", ErrInvalidBranch, name)
	case strings.HasSuffix(name, "."):
		return fmt.Errorf("%w: %.40q ends with '.'", ErrInvalidBranch, name)
	case strings.Contains(name, ".."):
		return fmt.Errorf("%w: %.40q contains \"..\"", ErrInvalidBranch, name)
	case strings.Contains(name, "@{"):
		return fmt.Errorf("%w: %.40q contains \"@{\"", ErrInvalidBranch, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return fmt.Errorf("%w: %.40q contains the forbidden byte 0x%02X", ErrInvalidBranch, name, c)
		}
	}
	for _, comp := range strings.Split(name, "/") {
		switch {
		case comp == "":
			return fmt.Errorf("%w: %.40q has an empty component (leading, trailing or double '/')", ErrInvalidBranch, name)
		case comp[0] == '.':
			return fmt.Errorf("%w: %.40q has a component starting with '.'", ErrInvalidBranch, name)
		case strings.HasSuffix(comp, ".lock"):
			return fmt.Errorf("%w: %.40q has a component ending with \".lock\"", ErrInvalidBranch, name)
		}
	}
	return nil
}
