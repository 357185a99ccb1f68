package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var (
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdFence    = regexp.MustCompile("(?ms)^\\s*```.*?^\\s*```")
	mdCode     = regexp.MustCompile("`[^`\n]*`")
	mdHeading  = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *#*$`)
	slugIgnore = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// TestDocLinksResolve checks every relative link of the README and of
// docs/*.md: the file it names exists, and a #fragment names a heading of
// the markdown file it points into (as GitHub makes anchors of headings).
func TestDocLinksResolve(t *testing.T) {
	t.Parallel()
	docs, err := filepath.Glob("../docs/*.md")
	require.NoError(t, err)
	require.NotEmpty(t, docs)
	files := append([]string{"../README.md"}, docs...)
	anchors := map[string]map[string]bool{}
	var broken []string
	for _, file := range files {
		links, err := relativeLinks(file)
		require.NoError(t, err)
		for _, link := range links {
			target, fragment, _ := strings.Cut(link, "#")
			path := file
			if target != "" {
				path = filepath.Join(filepath.Dir(file), target)
				if _, err := os.Stat(path); err != nil {
					broken = append(broken, fmt.Sprintf("%s: %s: no such file", file, link))
					continue
				}
			}
			if fragment == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			if anchors[path] == nil {
				anchors[path], err = headingAnchors(path)
				require.NoError(t, err)
			}
			if !anchors[path][fragment] {
				broken = append(broken, fmt.Sprintf("%s: %s: no heading makes the anchor #%s", file, link, fragment))
			}
		}
	}
	require.Empty(t, broken, "broken links")
}

// relativeLinks are the targets of the markdown links and images of file
// that are not URLs, outside code.
func relativeLinks(file string) ([]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	text := mdCode.ReplaceAllString(mdFence.ReplaceAllString(string(b), ""), "")
	var links []string
	for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
		if strings.Contains(m[1], "://") || strings.HasPrefix(m[1], "mailto:") {
			continue
		}
		links = append(links, m[1])
	}
	return links, nil
}

// headingAnchors are the anchors GitHub gives the headings of file:
// lower case, punctuation dropped, spaces as dashes, a repeated one
// suffixed -1, -2, ...
func headingAnchors(file string) (map[string]bool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	text := mdFence.ReplaceAllString(string(b), "")
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, m := range mdHeading.FindAllStringSubmatch(text, -1) {
		slug := strings.ReplaceAll(slugIgnore.ReplaceAllString(strings.ToLower(m[1]), ""), " ", "-")
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors, nil
}
