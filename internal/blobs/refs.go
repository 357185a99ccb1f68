package blobs

import (
	"bytes"
	"encoding/json"
)

// maxDepth bounds how deep Refs looks into nested JSON.
const maxDepth = 64

// Refs calls fn with the name of each blob raw refers to: every Ref (an
// object with a "blob" name and "truncated": true) at any depth of the JSON
// value raw, whatever field it replaced. raw that is not JSON, or holds no
// "blob" key at all, refers to none.
func Refs(raw []byte, fn func(name string)) {
	if !bytes.Contains(raw, []byte(`"blob"`)) {
		return
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return
	}
	walk(v, 0, fn)
}

func walk(v any, depth int, fn func(string)) {
	if depth > maxDepth {
		return
	}
	switch v := v.(type) {
	case map[string]any:
		if name, ok := v["blob"].(string); ok && v["truncated"] == true && ValidName(name) {
			fn(name)
			return
		}
		for _, e := range v {
			walk(e, depth+1, fn)
		}
	case []any:
		for _, e := range v {
			walk(e, depth+1, fn)
		}
	}
}
