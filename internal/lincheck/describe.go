package lincheck

import (
	"fmt"
	"slices"
	"strings"
)

func describeOperation(in, out any) string {
	i, o := in.(Input), out.(Output)
	var res string
	switch {
	case o.Unknown:
		res = "?"
	case i.Kind == Read:
		res = describeHolders(o.Holders)
	case o.Refused:
		res = "refused"
	case i.Kind == Acquire || i.Kind == TryAcquire:
		res = fmt.Sprintf("token %d", o.Token)
	default:
		res = "ok"
	}
	switch i.Kind {
	case Read:
		return fmt.Sprintf("read %s → %s", i.Name, res)
	case Release, Lost:
		return fmt.Sprintf("%s %s %s/%d → %s", i.Kind, i.Name, i.Client, i.Token, res)
	case Settle:
		return fmt.Sprintf("settle %s %s (op %d)", i.Name, i.Client, i.Ref)
	}
	return fmt.Sprintf("%s %s by %s (op %d) → %s", i.Kind, i.Name, i.Client, i.ID, res)
}

func describeHolders(hs []Holder) string {
	if len(hs) == 0 {
		return "free"
	}
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = fmt.Sprintf("%s/%d", h.Client, h.Token)
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

func describeState(st any) string {
	s := st.(state)
	half := ""
	if len(s.half) > 0 {
		half = fmt.Sprintf("; half settled: ops %v", s.half)
	}
	if len(s.grants) == 0 {
		return fmt.Sprintf("free (last token %d%s)", s.floor, half)
	}
	parts := make([]string, len(s.grants))
	for i, g := range s.grants {
		if g.token == 0 {
			parts[i] = fmt.Sprintf("%s/? (op %d, token in (%d, %d))", g.client, g.ref, g.lo, g.hi)
		} else {
			parts[i] = fmt.Sprintf("%s/%d", g.client, g.token)
		}
	}
	return fmt.Sprintf("%s (last token %d%s)", strings.Join(parts, ", "), s.floor, half)
}
