package wire

import "strings"

// errPrefix begins the text of every error holdfast defines.
const errPrefix = "holdfast: "

// chainError is errs[0] wrapping the errors after it: errors.Is and
// errors.As see each of them, and the message names the package once:
// "holdfast: lease lost: session expired", not "holdfast: lease lost:
// holdfast: session expired".
type chainError struct {
	errs []error
}

// Wrap returns outer wrapping causes, as fmt.Errorf("%w: %w", outer,
// cause) would, but with the "holdfast: " prefix of each cause dropped
// from the message (only the first error's prefix is kept). Nil causes are
// skipped.
func Wrap(outer error, causes ...error) error {
	errs := []error{outer}
	for _, c := range causes {
		if c != nil {
			errs = append(errs, c)
		}
	}
	return &chainError{errs: errs}
}

func (e *chainError) Error() string {
	var b strings.Builder
	b.WriteString(e.errs[0].Error())
	for _, c := range e.errs[1:] {
		b.WriteString(": ")
		b.WriteString(strings.TrimPrefix(c.Error(), errPrefix))
	}
	return b.String()
}

// Unwrap returns the wrapped errors, outermost first.
func (e *chainError) Unwrap() []error { return e.errs }
