package memnet_test

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/holdfast-go/holdfast/transport"
	"github.com/holdfast-go/holdfast/transport/memnet"
)

var (
	_ transport.Network       = (*memnet.Network)(nil)
	_ transport.GossipNetwork = (*memnet.Network)(nil)
	_ transport.Network       = (*memnet.Node)(nil)
	_ transport.GossipNetwork = (*memnet.Node)(nil)
)

// A partition holds stream data; Heal delivers it.
func ExampleNetwork_Partition() {
	n := memnet.New(42)
	defer n.Close()
	l, _ := n.Node("n1").Listen(":7000")
	c, _ := n.Node("n2").DialContext(context.Background(), "n1:7000")
	s, _ := l.Accept()

	n.Partition([]string{"n1"}, []string{"n2"})
	_, _ = c.Write([]byte("hi"))
	_ = s.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	_, err := s.Read(make([]byte, 2))
	fmt.Println("during partition:", err)

	n.Heal()
	_ = s.SetReadDeadline(time.Time{})
	b := make([]byte, 2)
	_, _ = io.ReadFull(s, b)
	fmt.Println("after heal:", string(b))
	// Output:
	// during partition: read memnet n1:7000->n2:40000: i/o timeout
	// after heal: hi
}
