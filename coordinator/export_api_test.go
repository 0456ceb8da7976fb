package coordinator

// Names the black-box tests use that are not exported.
var ErrRejected = errRejected
