package kafka

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

// brokerTests are upstream's tests that need a Kafka broker: upstream's tests
// dial it at localhost:9092 (and localhost:9093 for SASL), as upstream's
// docker-compose.yml runs it, and name its version in KAFKA_VERSION, as
// upstream's CI sets it. They run only when KAFKA_VERSION is set
// (KAFKA_VERSION=4.0.0 go test .); otherwise `go test` skips them and runs the
// tests that need no broker.
var brokerTests = []string{
	"TestBatchDontExpectEOF",
	"TestClient",
	"TestClientProduceAndConsume",
	"TestConn",
	"TestReadPartitionsNoTopic",
	"TestUnsupportedSASLMechanism",
	"TestConsumerGroup",
	"TestReader",
	"TestReaderOnNonZeroPartition",
	"TestCloseLeavesGroup",
	"TestReaderConsumerGroup",
	"TestRebalanceTooManyConsumers",
	"TestConsumerGroupWithTopic",
	"TestConsumerGroupWithGroupTopicsSingle",
	"TestConsumerGroupWithGroupTopicsMultiple",
	"TestReaderTruncatedResponse",
	"TestReaderReadCompactedMessage",
	"BenchmarkConn",
	"BenchmarkReader",
}

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv("KAFKA_VERSION") == "" {
		skip := "^(" + strings.Join(brokerTests, "|") + ")$"
		if s := flag.Lookup("test.skip").Value.String(); s != "" {
			skip = s + "|" + skip
		}
		if err := flag.Set("test.skip", skip); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Fprintf(os.Stderr, "kafka-go: %d tests that need a broker at localhost:9092 skipped (set KAFKA_VERSION to run them)\n", len(brokerTests))
	}
	os.Exit(m.Run())
}
