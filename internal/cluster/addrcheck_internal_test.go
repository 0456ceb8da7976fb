package cluster

import (
	"errors"
	"testing"
)

func TestCheckAddrs(t *testing.T) {
	ok := Addrs{GossipAddr: "127.0.0.1:0", RPCAddr: "localhost:0"}
	for _, tc := range []struct {
		name        string
		edit        func(*Addrs)
		field, want string
	}{
		{"fine", func(*Addrs) {}, "", ""},
		{"gossip host a name", func(a *Addrs) { a.GossipAddr = "localhost:7946" }, "GossipAddr", ""},
		{"gossip host a name in memory", func(a *Addrs) { a.GossipAddr, a.InMemory = "n1:7946", true }, "", ""},
		{"rpc without port", func(a *Addrs) { a.RPCAddr = "localhost" }, "RPCAddr", ""},
		{"advertised port", func(a *Addrs) { a.AdvertiseRPCAddr = "10.0.0.1:70000" }, "AdvertiseRPCAddr",
			`"10.0.0.1:70000": port 70000 is out of range (0 to 65535)`},
		{"join host alone", func(a *Addrs) { a.Join = []string{"seed"} }, "", ""},
		{"join port 0", func(a *Addrs) { a.Join = []string{"seed:1", "n2/seed:0"} }, "Join[1]",
			`"n2/seed:0": port 0 names no member: a join address is a member's gossip HOST:PORT`},
	} {
		a := ok
		tc.edit(&a)
		err := CheckAddrs(a)
		var fe *FieldError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v, want nil", tc.name, err)
		case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field || tc.want != "" && fe.Msg != tc.want):
			t.Errorf("%s: %v, want a FieldError of %s %q", tc.name, err, tc.field, tc.want)
		}
	}
}
