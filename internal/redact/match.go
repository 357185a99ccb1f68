package redact

import "strings"

// matcher finds the forms of a Redactor in text in one pass: a bit per
// two-byte prefix rejects almost every position at the cost of one load,
// and the forms sharing a four-byte prefix are compared where it passes.
// Every form is at least MinSecretLen (4) bytes long.
type matcher struct {
	two  [1 << 16 / 64]uint64
	four map[uint32][]int // forms by their first four bytes, longest first
}

func newMatcher(forms []form) *matcher {
	m := &matcher{four: map[uint32][]int{}}
	for i, f := range forms { // forms are sorted longest first
		k2 := uint32(f.text[0])<<8 | uint32(f.text[1])
		m.two[k2/64] |= 1 << (k2 % 64)
		k4 := key4(f.text, 0)
		m.four[k4] = append(m.four[k4], i)
	}
	return m
}

func key4(s string, i int) uint32 {
	return uint32(s[i])<<24 | uint32(s[i+1])<<16 | uint32(s[i+2])<<8 | uint32(s[i+3])
}

// first returns the index of the form that occurs first in s (the longest
// of those starting there), or -1.
func (m *matcher) first(s string, forms []form) int {
	if len(s) < 4 {
		return -1
	}
	next := uint32(s[0])
	for i := 0; i+4 <= len(s); i++ {
		k2 := next<<8 | uint32(s[i+1])
		next = uint32(s[i+1])
		if m.two[(k2>>6)&1023]&(1<<(k2&63)) == 0 {
			continue
		}
		for _, fi := range m.four[key4(s, i)] {
			if strings.HasPrefix(s[i:], forms[fi].text) {
				return fi
			}
		}
	}
	return -1
}
