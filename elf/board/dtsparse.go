// SPDX-License-Identifier: Apache-2.0

package board

import (
	"fmt"
	"strconv"
	"strings"
)

// The devicetree source reader: a lexer and a recursive-descent parser of
// the subset of DTS syntax a generated zephyr.dts uses, into a dtsTree.

// dtsLexer splits devicetree source into tokens. It keeps the line number
// for error messages.
type dtsLexer struct {
	src  string
	pos  int
	line int
}

type dtsToken struct {
	kind byte   // 'w' word, 'l' label (word:), 's' string, 'r' &ref, 'p' punctuation, 0 EOF
	text string // word, label, unquoted string, ref target or punctuation char
	line int
}

func isDTSWordChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(",._+*#?@-/", c) >= 0
}

func (l *dtsLexer) errorf(format string, args ...any) error {
	return &DevicetreeError{Line: l.line, Msg: fmt.Sprintf(format, args...)}
}

// skipSpace skips blanks and comments.
func (l *dtsLexer) skipSpace() error {
	for l.pos < len(l.src) {
		switch c := l.src[l.pos]; {
		case c == '\n':
			l.line++
			l.pos++
		case c == ' ' || c == '\t' || c == '\r':
			l.pos++
		case strings.HasPrefix(l.src[l.pos:], "//"):
			for l.pos < len(l.src) && l.src[l.pos] != '\n' {
				l.pos++
			}
		case strings.HasPrefix(l.src[l.pos:], "/*"):
			end := strings.Index(l.src[l.pos+2:], "*/")
			if end < 0 {
				return l.errorf("unterminated comment")
			}
			l.line += strings.Count(l.src[l.pos:l.pos+2+end], "\n")
			l.pos += end + 4
		default:
			return nil
		}
	}
	return nil
}

func (l *dtsLexer) next() (dtsToken, error) {
	if err := l.skipSpace(); err != nil {
		return dtsToken{}, err
	}
	if l.pos >= len(l.src) {
		return dtsToken{line: l.line}, nil
	}
	start, c := l.pos, l.src[l.pos]
	tok := dtsToken{line: l.line}
	switch {
	case c == '"':
		var sb strings.Builder
		for l.pos++; ; l.pos++ {
			if l.pos >= len(l.src) || l.src[l.pos] == '\n' {
				return tok, l.errorf("unterminated string")
			}
			ch := l.src[l.pos]
			if ch == '"' {
				break
			}
			if ch == '\\' && l.pos+1 < len(l.src) {
				l.pos++
				ch = l.src[l.pos]
			}
			sb.WriteByte(ch)
		}
		l.pos++
		tok.kind, tok.text = 's', sb.String()
	case c == '&':
		l.pos++
		if strings.HasPrefix(l.src[l.pos:], "{") {
			end := strings.IndexByte(l.src[l.pos:], '}')
			if end < 0 {
				return tok, l.errorf("unterminated &{path}")
			}
			tok.kind, tok.text = 'r', l.src[l.pos+1:l.pos+end]
			l.pos += end + 1
			break
		}
		for l.pos < len(l.src) && (isDTSWordChar(l.src[l.pos]) && l.src[l.pos] != '/') {
			l.pos++
		}
		if l.pos == start+1 {
			return tok, l.errorf("'&' without a label")
		}
		tok.kind, tok.text = 'r', l.src[start+1:l.pos]
	case isDTSWordChar(c) && c != ',': // a leading ',' separates values
		for l.pos < len(l.src) && isDTSWordChar(l.src[l.pos]) {
			l.pos++
		}
		tok.kind, tok.text = 'w', l.src[start:l.pos]
		if l.pos < len(l.src) && l.src[l.pos] == ':' {
			l.pos++
			tok.kind = 'l'
		}
	case strings.IndexByte("{};=<>[],()", c) >= 0:
		l.pos++
		tok.kind, tok.text = 'p', string(c)
	default:
		return tok, l.errorf("unexpected character %q", c)
	}
	return tok, nil
}

// dtsParser is a recursive-descent parser over dtsLexer with one token of
// lookahead.
type dtsParser struct {
	lex  dtsLexer
	tok  dtsToken
	tree *dtsTree
}

func (p *dtsParser) advance() error {
	t, err := p.lex.next()
	p.tok = t
	return err
}

func (p *dtsParser) errorf(format string, args ...any) error {
	return &DevicetreeError{Line: p.tok.line, Msg: fmt.Sprintf(format, args...)}
}

func (p *dtsParser) expect(punct string) error {
	if p.tok.kind != 'p' || p.tok.text != punct {
		return p.errorf("expected %q, found %q", punct, p.tok.text)
	}
	return p.advance()
}

func parseDTS(src string) (*dtsTree, error) {
	p := &dtsParser{lex: dtsLexer{src: src, line: 1}}
	p.tree = &dtsTree{root: &dtsNode{name: "/", props: map[string][]dtsValue{}}, labels: map[string]*dtsNode{}}
	if err := p.advance(); err != nil {
		return nil, err
	}
	for p.tok.kind != 0 {
		switch {
		case p.tok.kind == 'w' && p.tok.text == "/dts-v1/":
			if err := p.advance(); err != nil {
				return nil, err
			}
			if err := p.expect(";"); err != nil {
				return nil, err
			}
		case p.tok.kind == 'w' && p.tok.text == "/memreserve/":
			for p.tok.kind != 'p' || p.tok.text != ";" {
				if p.tok.kind == 0 {
					return nil, p.errorf("unterminated /memreserve/")
				}
				if err := p.advance(); err != nil {
					return nil, err
				}
			}
			if err := p.advance(); err != nil {
				return nil, err
			}
		case p.tok.kind == 'w' && p.tok.text == "/":
			if err := p.advance(); err != nil {
				return nil, err
			}
			if err := p.nodeBody(p.tree.root); err != nil {
				return nil, err
			}
		case p.tok.kind == 'r': // &label { ... }; amends a labelled node
			n, err := p.tree.lookup(p.tok.text)
			if err != nil {
				return nil, p.errorf("%v", err)
			}
			if err := p.advance(); err != nil {
				return nil, err
			}
			if err := p.nodeBody(n); err != nil {
				return nil, err
			}
		default:
			return nil, p.errorf("unexpected %q at top level (only /dts-v1/, / { } and &label { } are supported)", p.tok.text)
		}
	}
	return p.tree, nil
}

// nodeBody parses "{ properties and children };" into n.
func (p *dtsParser) nodeBody(n *dtsNode) error {
	if err := p.expect("{"); err != nil {
		return err
	}
	for p.tok.kind != 'p' || p.tok.text != "}" {
		var labels []string
		for p.tok.kind == 'l' {
			labels = append(labels, p.tok.text)
			if err := p.advance(); err != nil {
				return err
			}
		}
		if p.tok.kind != 'w' {
			return p.errorf("expected a property or node name, found %q", p.tok.text)
		}
		if strings.HasPrefix(p.tok.text, "/") {
			return p.errorf("directive %s is not supported; use the generated zephyr/zephyr.dts", p.tok.text)
		}
		name := p.tok.text
		if err := p.advance(); err != nil {
			return err
		}
		if p.tok.kind == 'p' && p.tok.text == "{" {
			child := n.child(name)
			if child == nil {
				child = &dtsNode{name: name, props: map[string][]dtsValue{}, parent: n}
				n.children = append(n.children, child)
			}
			for _, l := range labels {
				child.labels = append(child.labels, l)
				p.tree.labels[l] = child
			}
			if err := p.nodeBody(child); err != nil {
				return err
			}
			continue
		}
		vals, err := p.propValue()
		if err != nil {
			return err
		}
		n.props[name] = vals
	}
	if err := p.advance(); err != nil {
		return err
	}
	return p.expect(";")
}

// propValue parses "[= value {, value}] ;".
func (p *dtsParser) propValue() ([]dtsValue, error) {
	vals := []dtsValue{}
	if p.tok.kind == 'p' && p.tok.text == ";" {
		return vals, p.advance()
	}
	if err := p.expect("="); err != nil {
		return nil, err
	}
	for {
		for p.tok.kind == 'l' { // labels inside values are legal and meaningless here
			if err := p.advance(); err != nil {
				return nil, err
			}
		}
		var v dtsValue
		switch {
		case p.tok.kind == 's':
			v = dtsValue{kind: 's', str: p.tok.text}
		case p.tok.kind == 'r':
			v = dtsValue{kind: 'r', ref: p.tok.text}
		case p.tok.kind == 'p' && p.tok.text == "<":
			cells, err := p.cells()
			if err != nil {
				return nil, err
			}
			v = dtsValue{kind: 'c', cells: cells}
		case p.tok.kind == 'p' && p.tok.text == "[":
			b, err := p.byteString()
			if err != nil {
				return nil, err
			}
			v = dtsValue{kind: 'b', bytes: b}
		case p.tok.kind == 'w' && p.tok.text == "/bits/":
			return nil, p.errorf("/bits/ is not supported")
		default:
			return nil, p.errorf("unexpected %q in a property value", p.tok.text)
		}
		vals = append(vals, v)
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind == 'p' && p.tok.text == "," {
			if err := p.advance(); err != nil {
				return nil, err
			}
			continue
		}
		return vals, p.expect(";")
	}
}

// cells parses the inside of <...>, leaving p.tok on the closing '>'.
func (p *dtsParser) cells() ([]dtsCell, error) {
	var cells []dtsCell
	for {
		if err := p.advance(); err != nil {
			return nil, err
		}
		switch {
		case p.tok.kind == 'p' && p.tok.text == ">":
			return cells, nil
		case p.tok.kind == 'r':
			cells = append(cells, dtsCell{ref: p.tok.text})
		case p.tok.kind == 'l':
			// a label on a cell
		case p.tok.kind == 'w':
			v, err := strconv.ParseUint(p.tok.text, 0, 32)
			if err != nil {
				return nil, p.errorf("bad cell %q (expressions are not supported; use the generated zephyr/zephyr.dts)", p.tok.text)
			}
			cells = append(cells, dtsCell{num: v})
		default:
			return nil, p.errorf("unexpected %q in <...>", p.tok.text)
		}
	}
}

// byteString parses the inside of [...], leaving p.tok on the ']'.
func (p *dtsParser) byteString() ([]byte, error) {
	var out []byte
	for {
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind == 'p' && p.tok.text == "]" {
			return out, nil
		}
		if p.tok.kind != 'w' || len(p.tok.text)%2 != 0 {
			return nil, p.errorf("bad byte string element %q", p.tok.text)
		}
		for i := 0; i < len(p.tok.text); i += 2 {
			v, err := strconv.ParseUint(p.tok.text[i:i+2], 16, 8)
			if err != nil {
				return nil, p.errorf("bad byte string element %q", p.tok.text)
			}
			out = append(out, byte(v))
		}
	}
}
