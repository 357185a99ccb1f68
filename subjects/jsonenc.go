package subjects

// Hand-written JSON encoders outside this package (a runner's result in
// the cache, a role event's input) write exactly what json.Marshal writes,
// as this package's own do; these are their pieces.

// AppendJSONString appends s to dst as json.Marshal writes a string.
func AppendJSONString(dst []byte, s string) []byte { return appendJSONString(dst, s) }

// AppendRawJSON appends raw to dst as json.Marshal writes a
// json.RawMessage, when it can: null for a nil raw, raw itself when it is
// already in the form json.Marshal writes (compact, valid, its HTML
// characters escaped). Otherwise it appends nothing and returns false:
// the caller encodes with json.Marshal, which then compacts, escapes or
// refuses raw itself.
func AppendRawJSON(dst, raw []byte) ([]byte, bool) {
	switch {
	case raw == nil:
		return append(dst, "null"...), true
	case canonicalJSON(raw):
		return append(dst, raw...), true
	}
	return dst, false
}
