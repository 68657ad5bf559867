package kafka

// Read committed (kafka-go#1332): a Reader, Batch or Conn with IsolationLevel
// ReadCommitted never hands the application a control record (a transaction's
// commit or abort marker) nor a record of an aborted transaction, as Kafka's Java
// client (CompletedFetch) does, and reads past them. These tests serve a
// partition's log, built record batch by record batch (magic v2), from a fake
// broker that answers fetches as Kafka does: the response names the aborted
// transactions whose range overlaps the records it returns.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/apiversions"
	fetchapi "github.com/segmentio/kafka-go/protocol/fetch"
	"github.com/segmentio/kafka-go/protocol/listoffsets"
	metadataapi "github.com/segmentio/kafka-go/protocol/metadata"
	"github.com/stretchr/testify/require"
)

// txRecord is a record of the log; a control record's key is its type.
type txRecord struct {
	key, value []byte
}

// txBatch is a record batch (magic v2) of the log.
type txBatch struct {
	base     int64 // offset of its first record
	producer int64 // -1 for none
	attrs    int16 // protocol.Transactional, protocol.Control
	codec    CompressionCodec
	records  []txRecord
}

func (b txBatch) last() int64 { return b.base + int64(len(b.records)) - 1 }

// bytes encodes the batch as a broker returns it in a fetch response.
func (b txBatch) bytes() []byte {
	attrs := b.attrs
	if b.codec != nil {
		attrs |= int16(b.codec.Code())
	}
	epoch := int16(-1)
	if b.producer >= 0 {
		epoch = 0
	}
	return newWB().call(func(wb *kafkaWriteBuffer) {
		wb.writeInt64(b.base)
		wb.writeBytes(newWB().call(func(wb *kafkaWriteBuffer) {
			wb.writeInt32(0)                         // partition leader epoch
			wb.writeInt8(2)                          // magic
			wb.writeInt32(0)                         // crc, unused by the reader
			wb.writeInt16(attrs)                     // attributes
			wb.writeInt32(int32(len(b.records) - 1)) // last offset delta
			wb.writeInt64(1000)                      // first timestamp
			wb.writeInt64(1000)                      // max timestamp
			wb.writeInt64(b.producer)                // producer id
			wb.writeInt16(epoch)                     // producer epoch
			wb.writeInt32(0)                         // base sequence
			wb.writeInt32(int32(len(b.records)))     // record count
			recs := newWB().call(func(wb *kafkaWriteBuffer) {
				for i, r := range b.records {
					record := newWB().call(func(wb *kafkaWriteBuffer) {
						wb.writeInt8(0)          // record attributes
						wb.writeVarInt(0)        // timestamp delta
						wb.writeVarInt(int64(i)) // offset delta
						wb.writeVarBytes(r.key)
						wb.writeVarBytes(r.value)
						wb.writeVarInt(0) // headers
					})
					wb.writeVarInt(int64(len(record)))
					wb.Write(record)
				}
			})
			if b.codec != nil {
				recs = mustCompress(recs, b.codec)
			}
			wb.Write(recs)
		}))
	})
}

// txAborted is an aborted transaction of the log: its producer, the offset of its
// first record and that of its ABORT marker.
type txAborted struct {
	producer, first, marker int64
}

// txLog is a partition's log, built by appending batches in offset order. It
// records the transactions it aborted, which a fetch response names, and the
// values a read committed consumer must see.
type txLog struct {
	batches []txBatch
	aborted []txAborted
	end     int64           // offset after the last record
	open    map[int64]int64 // producer -> first offset of its open transaction
	pending map[int64][]int // producer -> its open transaction's values (indexes)
	all     []string        // values, in offset order
	shown   []bool          // whether a read committed consumer sees all[i]
}

func newTxLog() *txLog {
	return &txLog{open: map[int64]int64{}, pending: map[int64][]int{}}
}

// visible is the values a read committed consumer sees, in offset order.
func (l *txLog) visible() (values []string) {
	for i, v := range l.all {
		if l.shown[i] {
			values = append(values, v)
		}
	}
	return values
}

func (l *txLog) append(b txBatch) {
	b.base = l.end
	l.end = b.last() + 1
	l.batches = append(l.batches, b)
}

func txRecords(values []string) []txRecord {
	rs := make([]txRecord, len(values))
	for i, v := range values {
		rs[i] = txRecord{key: []byte("k-" + v), value: []byte(v)}
	}
	return rs
}

func (l *txLog) isOpen(p int64) bool {
	_, ok := l.open[p]
	return ok
}

// plain appends a batch of a producer without transactions.
func (l *txLog) plain(values ...string) *txLog {
	l.append(txBatch{producer: -1, records: txRecords(values)})
	for _, v := range values {
		l.all, l.shown = append(l.all, v), append(l.shown, true)
	}
	return l
}

// txn appends a batch of producer p's open transaction (beginning it if none is).
func (l *txLog) txn(p int64, values ...string) *txLog {
	return l.txnWith(p, nil, values...)
}

func (l *txLog) txnWith(p int64, codec CompressionCodec, values ...string) *txLog {
	if _, ok := l.open[p]; !ok {
		l.open[p] = l.end
	}
	l.append(txBatch{producer: p, attrs: int16(protocol.Transactional), codec: codec, records: txRecords(values)})
	for _, v := range values {
		l.pending[p] = append(l.pending[p], len(l.all))
		l.all, l.shown = append(l.all, v), append(l.shown, false)
	}
	return l
}

// marker appends a control batch of producer p: its record's key is a version
// (int16) and a type (int16), ABORT 0 or COMMIT 1; its value a version and the
// coordinator's epoch.
func (l *txLog) marker(p int64, typ int16) *txLog {
	key := []byte{0, 0, byte(typ >> 8), byte(typ)}
	l.append(txBatch{producer: p, attrs: int16(protocol.Transactional | protocol.Control), records: []txRecord{{key: key, value: []byte{0, 0, 0, 0, 0, 7}}}})
	return l
}

// commit ends producer p's open transaction with a COMMIT marker.
func (l *txLog) commit(p int64) *txLog {
	l.marker(p, 1)
	for _, i := range l.pending[p] {
		l.shown[i] = true
	}
	delete(l.pending, p)
	delete(l.open, p)
	return l
}

// abort ends producer p's open transaction with an ABORT marker.
func (l *txLog) abort(p int64) *txLog {
	first, ok := l.open[p]
	l.marker(p, 0)
	if ok {
		l.aborted = append(l.aborted, txAborted{producer: p, first: first, marker: l.end - 1})
	}
	delete(l.pending, p)
	delete(l.open, p)
	return l
}

// txFetch is what the fake broker answered to one fetch.
type txFetch struct {
	offset  int64
	version int16
	aborted []txAborted
	batches int
}

// txBroker serves one partition (0) of one topic, whose log is l, to kafka-go's
// Conn: ApiVersions, Metadata, ListOffsets and Fetch.
type txBroker struct {
	t     *testing.T
	topic string
	l     *txLog
	// perFetch is how many batches a fetch response holds at most (0: all of
	// them); fetchVersion the highest fetch version it supports (5 or 10).
	perFetch     int
	fetchVersion int16
	// late, when set, holds back all but a response's first batch that long, as
	// a busy machine does: the rest arrives after the fetch's wait is over.
	late time.Duration

	ln      net.Listener
	mutex   sync.Mutex
	fetches []txFetch
}

func startTxBroker(t *testing.T, l *txLog, perFetch int) *txBroker {
	return startTxBrokerVersion(t, l, perFetch, 10)
}

func startTxBrokerVersion(t *testing.T, l *txLog, perFetch int, fetchVersion int16) *txBroker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b := &txBroker{t: t, topic: "orders", l: l, perFetch: perFetch, fetchVersion: fetchVersion, ln: ln}
	var wg sync.WaitGroup
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		b.mutex.Lock()
		for _, c := range conns {
			c.Close()
		}
		b.mutex.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.mutex.Lock()
			conns = append(conns, c)
			b.mutex.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				b.serve(c)
			}()
		}
	}()
	return b
}

func (b *txBroker) addr() string { return b.ln.Addr().String() }

func (b *txBroker) fetchLog() []txFetch {
	b.mutex.Lock()
	defer b.mutex.Unlock()
	return append([]txFetch(nil), b.fetches...)
}

func (b *txBroker) serve(c net.Conn) {
	r, w := bufio.NewReader(c), bufio.NewWriter(c)
	host, port, _ := net.SplitHostPort(b.addr())
	portNum, _ := strconv.Atoi(port)
	for {
		version, correlationID, _, msg, err := protocol.ReadRequest(r)
		if err != nil {
			return
		}
		var res protocol.Message
		switch req := msg.(type) {
		case *apiversions.Request:
			res = &apiversions.Response{ApiKeys: []apiversions.ApiKeyResponse{
				{ApiKey: int16(protocol.Fetch), MinVersion: 0, MaxVersion: b.fetchVersion},
				{ApiKey: int16(protocol.ListOffsets), MinVersion: 1, MaxVersion: 1},
				{ApiKey: int16(protocol.Metadata), MinVersion: 0, MaxVersion: 1},
				{ApiKey: int16(protocol.ApiVersions), MinVersion: 0, MaxVersion: 0},
			}}
		case *metadataapi.Request:
			res = &metadataapi.Response{
				Brokers:      []metadataapi.ResponseBroker{{NodeID: 1, Host: host, Port: int32(portNum)}},
				ControllerID: 1,
				Topics: []metadataapi.ResponseTopic{{Name: b.topic, Partitions: []metadataapi.ResponsePartition{
					{PartitionIndex: 0, LeaderID: 1, ReplicaNodes: []int32{1}, IsrNodes: []int32{1}},
				}}},
			}
		case *listoffsets.Request:
			p := req.Topics[0].Partitions[0]
			offset := b.l.end // latest (-1)
			if p.Timestamp == -2 {
				offset = 0 // earliest
			}
			res = &listoffsets.Response{Topics: []listoffsets.ResponseTopic{{Topic: b.topic, Partitions: []listoffsets.ResponsePartition{
				{Partition: 0, Timestamp: p.Timestamp, Offset: offset},
			}}}}
		case *fetchapi.Request:
			if err := b.fetch(w, version, correlationID, req); err != nil {
				return
			}
			continue
		default:
			b.t.Errorf("fake broker: unexpected request %T", msg)
			return
		}
		if err := protocol.WriteResponse(w, version, correlationID, res); err != nil {
			return
		}
		if err := w.Flush(); err != nil {
			return
		}
	}
}

// fetch answers a fetch as Kafka does: the batches from the one holding the fetch
// offset on, and, for read committed, the aborted transactions whose range (first
// offset to ABORT marker) overlaps the offsets it returns.
func (b *txBroker) fetch(w *bufio.Writer, version int16, correlationID int32, req *fetchapi.Request) error {
	offset := req.Topics[0].Partitions[0].FetchOffset
	var batches []txBatch
	for _, batch := range b.l.batches {
		if batch.last() >= offset && (b.perFetch == 0 || len(batches) < b.perFetch) {
			batches = append(batches, batch)
		}
	}
	upper := b.l.end
	if len(batches) > 0 {
		upper = batches[len(batches)-1].last() + 1
	}
	var aborted []txAborted
	if req.IsolationLevel == int8(ReadCommitted) {
		for _, a := range b.l.aborted {
			if a.marker >= offset && a.first < upper {
				aborted = append(aborted, a)
			}
		}
		// Kafka lists them in its transaction index's order (by marker); Conn
		// sorts them by first offset: list them newest first.
		for i, j := 0, len(aborted)-1; i < j; i, j = i+1, j-1 {
			aborted[i], aborted[j] = aborted[j], aborted[i]
		}
	}
	if len(batches) == 0 {
		time.Sleep(min(time.Duration(req.MaxWaitTime)*time.Millisecond, 20*time.Millisecond))
	}
	b.mutex.Lock()
	b.fetches = append(b.fetches, txFetch{offset: offset, version: version, aborted: aborted, batches: len(batches)})
	b.mutex.Unlock()

	body := newWB().call(func(wb *kafkaWriteBuffer) {
		wb.writeInt32(0) // throttle time
		if version >= 7 {
			wb.writeInt16(0) // error code
			wb.writeInt32(0) // session id
		}
		wb.writeInt32(1) // topics
		wb.writeString(b.topic)
		wb.writeInt32(1) // partitions
		wb.writeInt32(0) // partition
		wb.writeInt16(0) // error code
		wb.writeInt64(b.l.end)
		wb.writeInt64(b.l.end) // last stable offset
		wb.writeInt64(0)       // log start offset
		wb.writeInt32(int32(len(aborted)))
		for _, a := range aborted {
			wb.writeInt64(a.producer)
			wb.writeInt64(a.first)
		}
		wb.writeBytes(newWB().call(func(wb *kafkaWriteBuffer) {
			for _, batch := range batches {
				wb.Write(batch.bytes())
			}
		}))
	})
	frame := newWB().call(func(wb *kafkaWriteBuffer) {
		wb.writeInt32(int32(4 + len(body)))
		wb.writeInt32(correlationID)
		wb.Write(body)
	})
	if b.late > 0 && len(batches) > 1 {
		first := len(frame) - recordsLen(batches) + len(batches[0].bytes()) // the records end the frame
		if _, err := w.Write(frame[:first]); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
		time.Sleep(b.late)
		frame = frame[first:]
	}
	if _, err := w.Write(frame); err != nil {
		return err
	}
	return w.Flush()
}

func recordsLen(batches []txBatch) (n int) {
	for _, batch := range batches {
		n += len(batch.bytes())
	}
	return n
}

// conn is a Conn to the fake broker's partition, at offset 0.
func (b *txBroker) conn(t *testing.T) *Conn {
	t.Helper()
	c, err := net.Dial("tcp", b.addr())
	require.NoError(t, err)
	conn := NewConnWith(c, ConnConfig{Topic: b.topic, Partition: 0})
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = conn.Seek(0, SeekAbsolute)
	require.NoError(t, err)
	return conn
}

// readTxBatch reads one fetch response's messages with Batch.ReadMessage: their
// values and offsets, and the batch's offset after them.
func readTxBatch(t *testing.T, conn *Conn, level IsolationLevel) (values []string, offsets []int64, next int64) {
	t.Helper()
	batch := conn.ReadBatchWith(ReadBatchConfig{MinBytes: 1, MaxBytes: 1 << 20, IsolationLevel: level, MaxWait: 100 * time.Millisecond})
	for {
		msg, err := batch.ReadMessage()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("reading the batch: %v", err)
			}
			break
		}
		values = append(values, string(msg.Value))
		offsets = append(offsets, msg.Offset)
	}
	require.NoError(t, batch.Close())
	return values, offsets, batch.Offset()
}

// readTxFetches reads the partition with Batch.ReadMessage, fetch after fetch, until
// the log's end.
func readTxFetches(t *testing.T, b *txBroker, level IsolationLevel) (values []string) {
	t.Helper()
	conn := b.conn(t)
	for next := int64(0); next < b.l.end; {
		v, _, n := readTxBatch(t, conn, level)
		require.Greater(t, n, next, "a fetch must move the offset forward")
		values, next = append(values, v...), n
		require.Equal(t, next, conn.offset)
	}
	return values
}

// TestReadCommittedCommitMarkerDoesNotEndAbort: only an ABORT marker of its
// producer ends an aborted transaction's range, as in the Java client's
// CompletedFetch (abortedProducerIds.remove only when containsAbortMarker); a
// COMMIT marker of that producer inside the range leaves its records hidden.
func TestReadCommittedCommitMarkerDoesNotEndAbort(t *testing.T) {
	l := newTxLog().
		txn(1, "p1-aborted-0").
		marker(1, 1). // a COMMIT marker of producer 1 inside its aborted range
		txn(1, "p1-aborted-2").
		abort(1).
		txn(1, "p1-committed").
		commit(1).
		plain("plain")
	require.Equal(t, []txAborted{{producer: 1, first: 0, marker: 3}}, l.aborted)

	b := startTxBroker(t, l, 0)
	values, offsets, next := readTxBatch(t, b.conn(t), ReadCommitted)
	require.Equal(t, []string{"p1-committed", "plain"}, values)
	require.Equal(t, []int64{4, 6}, offsets)
	require.Equal(t, int64(7), next)
}

// TestReadCommittedInterleavedProducers: three transactional producers and one
// without transactions write interleaved on the partition, three transactions
// aborted and two committed, in one fetch response; only the committed and the
// non-transactional records are read, in offset order.
func TestReadCommittedInterleavedProducers(t *testing.T) {
	l := newTxLog().
		txn(1, "p1-a", "p1-b"). // aborted
		txn(2, "p2-a").         // committed
		plain("plain-1").
		txn(3, "p3-a"). // aborted
		txn(1, "p1-c").
		txn(2, "p2-b", "p2-c").
		abort(1).
		plain("plain-2").
		commit(2).
		txn(3, "p3-b"). // hidden still: other producers' markers do not end its range
		txn(1, "p1-d"). // producer 1's next transaction, committed
		abort(3).
		txn(2, "p2-d"). // aborted
		commit(1).
		abort(2)
	require.Len(t, l.aborted, 3)

	for _, version := range []int16{5, 10} {
		t.Run(fmt.Sprintf("fetch v%d", version), func(t *testing.T) {
			b := startTxBrokerVersion(t, l, 0, version)
			values, _, next := readTxBatch(t, b.conn(t), ReadCommitted)
			require.Equal(t, []string{"p2-a", "plain-1", "p2-b", "p2-c", "plain-2", "p1-d"}, values)
			require.Equal(t, l.visible(), values)
			require.Equal(t, l.end, next)
			f := b.fetchLog()
			require.Len(t, f, 1)
			require.Equal(t, version, f[0].version)
			require.Len(t, f[0].aborted, 3, "the response names the aborted transactions")
		})
	}
}

// TestReadCommittedAbortSpansFetches: an aborted transaction starts in one fetch
// response and its ABORT marker arrives in a later one; the broker names it in
// each, and its records are hidden in every response, those after the first too.
func TestReadCommittedAbortSpansFetches(t *testing.T) {
	l := newTxLog().
		plain("plain-0").
		txn(1, "p1-aborted-1").
		txn(2, "p2-committed-2").
		txn(1, "p1-aborted-3").
		txn(1, "p1-aborted-4").
		commit(2).
		txn(1, "p1-aborted-6").
		abort(1).
		plain("plain-8")

	b := startTxBroker(t, l, 2)
	conn := b.conn(t)

	values, offsets, next := readTxBatch(t, conn, ReadCommitted) // offsets 0 and 1
	require.Equal(t, []string{"plain-0"}, values)
	require.Equal(t, []int64{0}, offsets)
	require.Equal(t, int64(2), next, "the aborted record at the end of the response is read past")

	values, _, next = readTxBatch(t, conn, ReadCommitted) // offsets 2 and 3
	require.Equal(t, []string{"p2-committed-2"}, values)
	require.Equal(t, int64(4), next)

	values, _, next = readTxBatch(t, conn, ReadCommitted) // 4 and the COMMIT marker 5
	require.Empty(t, values)
	require.Equal(t, int64(6), next)

	values, _, next = readTxBatch(t, conn, ReadCommitted) // 6 and the ABORT marker 7
	require.Empty(t, values)
	require.Equal(t, int64(8), next)

	values, _, next = readTxBatch(t, conn, ReadCommitted) // 8
	require.Equal(t, []string{"plain-8"}, values)
	require.Equal(t, int64(9), next)

	f := b.fetchLog()
	require.Len(t, f, 5)
	for i, want := range [][]txAborted{{{1, 1, 7}}, {{1, 1, 7}}, {{1, 1, 7}}, {{1, 1, 7}}, nil} {
		require.Equal(t, want, f[i].aborted, "fetch %d at offset %d", i, f[i].offset)
	}
}

// TestReadCommittedControlBatchLast: a response whose last batch is a control
// batch (a COMMIT, then an ABORT marker) ends with the records before it, and the
// next fetch starts after the marker; Batch.Read (and so Conn.Read) never hands
// the marker's value to the application in place of a message.
func TestReadCommittedControlBatchLast(t *testing.T) {
	l := newTxLog().
		txn(1, "p1-committed").
		commit(1).
		txn(1, "p1-aborted").
		abort(1)

	t.Run("ReadMessage", func(t *testing.T) {
		b := startTxBroker(t, l, 2)
		conn := b.conn(t)
		values, _, next := readTxBatch(t, conn, ReadCommitted)
		require.Equal(t, []string{"p1-committed"}, values)
		require.Equal(t, int64(2), next)
		values, _, next = readTxBatch(t, conn, ReadCommitted)
		require.Empty(t, values)
		require.Equal(t, int64(4), next)
	})

	t.Run("Read", func(t *testing.T) {
		b := startTxBroker(t, l, 2)
		conn := b.conn(t)
		buf := make([]byte, 64)
		steps := []struct {
			value string
			next  int64
		}{
			{"p1-committed", 1}, // Batch.Read reads one message, as Conn.Read does
			{"", 3},             // the COMMIT marker and the aborted record, read past
			{"", 4},             // the ABORT marker
		}
		for _, step := range steps {
			batch := conn.ReadBatchWith(ReadBatchConfig{MinBytes: 1, MaxBytes: 1 << 20, IsolationLevel: ReadCommitted, MaxWait: 100 * time.Millisecond})
			n, err := batch.Read(buf)
			if step.value == "" {
				require.ErrorIs(t, err, io.EOF)
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, step.value, string(buf[:n]))
			require.NoError(t, batch.Close())
			require.Equal(t, step.next, conn.offset)
		}
	})
}

// TestReadCommittedCompressedAbortedBatch: an aborted transaction's records in a
// compressed batch are hidden too, and the records after it are read.
func TestReadCommittedCompressedAbortedBatch(t *testing.T) {
	l := newTxLog().
		txnWith(1, Gzip.Codec(), "p1-aborted-0", "p1-aborted-1", "p1-aborted-2").
		txnWith(2, Gzip.Codec(), "p2-committed-3", "p2-committed-4").
		abort(1).
		commit(2).
		plain("plain-7")
	b := startTxBroker(t, l, 0)
	values, offsets, next := readTxBatch(t, b.conn(t), ReadCommitted)
	require.Equal(t, []string{"p2-committed-3", "p2-committed-4", "plain-7"}, values)
	require.Equal(t, []int64{3, 4, 7}, offsets)
	require.Equal(t, int64(8), next)
}

// TestReadUncommittedHidesOnlyMarkers: with ReadUncommitted the broker names no
// aborted transaction: every record is read, but never a control record.
func TestReadUncommittedHidesOnlyMarkers(t *testing.T) {
	l := newTxLog().
		txn(1, "p1-aborted").
		plain("plain").
		abort(1).
		txn(2, "p2-committed").
		commit(2)
	b := startTxBroker(t, l, 0)
	values, _, next := readTxBatch(t, b.conn(t), ReadUncommitted)
	require.Equal(t, []string{"p1-aborted", "plain", "p2-committed"}, values)
	require.Equal(t, l.all, values)
	require.Equal(t, l.end, next)
	require.Empty(t, b.fetchLog()[0].aborted)
}

// TestReaderOffsetMovesPastHiddenRecords: a Reader whose partition ends with an
// aborted transaction and markers reads the committed messages, then its Offset
// (and Lag) move past the hidden records to the end of the log, so that a
// consumer committing Offset does not read them again.
func TestReaderOffsetMovesPastHiddenRecords(t *testing.T) {
	l := newTxLog().
		plain("plain-0").
		txn(1, "p1-committed-1").
		commit(1).
		txn(2, "p2-aborted-3").
		txn(2, "p2-aborted-4").
		abort(2).
		txn(1, "p1-aborted-6").
		abort(1)
	require.Equal(t, int64(8), l.end)

	for _, perFetch := range []int{0, 1, 3} {
		t.Run(fmt.Sprintf("%d batches a fetch", perFetch), func(t *testing.T) {
			b := startTxBroker(t, l, perFetch)
			r := newTxReader(t, b)
			require.Equal(t, []string{"plain-0", "p1-committed-1"}, readTxMessages(t, r, 2))
			waitTxOffset(t, r, l.end)
			require.Equal(t, int64(0), r.Lag())
		})
	}
}

// TestReaderOffsetMovesPastHiddenRecordsReadLate: a response whose hidden records
// at the end arrive after the fetch's wait (the batch then ends in
// RequestTimedOut, which the reader retries from past them) still moves
// Offset past them: else the partition's Offset stays short of its end.
func TestReaderOffsetMovesPastHiddenRecordsReadLate(t *testing.T) {
	l := newTxLog().
		plain("plain-0").
		txn(2, "p2-aborted-1").
		abort(2)
	b := startTxBroker(t, l, 0)
	b.late = 200 * time.Millisecond // four times the reader's MaxWait
	r := newTxReader(t, b)
	require.Equal(t, []string{"plain-0"}, readTxMessages(t, r, 1))
	waitTxOffset(t, r, l.end)
}

// TestReaderReadCommittedSimulatedProducers: three transactional producers commit
// and abort transactions at random, interleaved with each other and with records
// without transactions; read through fetch responses of one to five batches, a
// Reader returns exactly the committed and non-transactional records in offset
// order, and its Offset reaches the end of the log.
func TestReaderReadCommittedSimulatedProducers(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		rng := rand.New(rand.NewSource(seed))
		l := newTxLog()
		for i := 0; i < 200; i++ {
			p := int64(rng.Intn(4)) // 0: no transaction
			v := fmt.Sprintf("r%d-p%d", i, p)
			switch {
			case p == 0:
				l.plain(v)
			case l.isOpen(p):
				switch rng.Intn(4) {
				case 0:
					l.commit(p)
				case 1:
					l.abort(p)
				default:
					l.txn(p, v)
				}
			default:
				l.txn(p, v)
			}
		}
		for p := int64(1); p <= 3; p++ { // close the transactions left open
			if l.isOpen(p) {
				l.abort(p)
			}
		}
		require.NotEmpty(t, l.aborted)
		perFetch := 1 + int(seed)%5
		t.Run(fmt.Sprintf("seed %d, %d batches a fetch", seed, perFetch), func(t *testing.T) {
			b := startTxBroker(t, l, perFetch)
			r := newTxReader(t, b)
			visible := l.visible()
			require.Equal(t, visible, readTxMessages(t, r, len(visible)))
			waitTxOffset(t, r, l.end)
			require.Equal(t, visible, readTxFetches(t, b, ReadCommitted), "Batch.ReadMessage, fetch after fetch")
		})
	}
}

func newTxReader(t *testing.T, b *txBroker) *Reader {
	t.Helper()
	r := NewReader(ReaderConfig{
		Brokers:        []string{b.addr()},
		Topic:          b.topic,
		Partition:      0,
		IsolationLevel: ReadCommitted,
		MaxWait:        50 * time.Millisecond,
	})
	t.Cleanup(func() { r.Close() })
	return r
}

func readTxMessages(t *testing.T, r *Reader, n int) (values []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for len(values) < n {
		msg, err := r.FetchMessage(ctx)
		require.NoError(t, err)
		values = append(values, string(msg.Value))
	}
	return values
}

// waitTxOffset waits for r's Offset to reach offset, with no message to read.
func waitTxOffset(t *testing.T, r *Reader, offset int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for r.Offset() < offset && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		msg, err := r.FetchMessage(ctx) // takes the position the reader sends
		cancel()
		if err == nil {
			t.Fatalf("unexpected message at offset %d: %q", msg.Offset, msg.Value)
		}
		require.ErrorIs(t, err, context.DeadlineExceeded)
	}
	require.Equal(t, offset, r.Offset())
}
