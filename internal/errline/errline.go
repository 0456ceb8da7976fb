package errline

import "strings"

// Join returns an error of errs (nil ones dropped; nil when none is left)
// whose text is theirs on one line, "; " between them, and which
// errors.Is and errors.As match against each: for errors that are logged,
// where errors.Join's newline would break the line.
func Join(errs ...error) error {
	var out list
	for _, err := range errs {
		if err != nil {
			out = append(out, err)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

type list []error

func (l list) Error() string {
	msgs := make([]string, len(l))
	for i, err := range l {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (l list) Unwrap() []error { return l }
