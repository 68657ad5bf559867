// Producers on Kafka's own client (kafka-clients), as Flink, Kafka Streams, NiFi
// and outbox relays produce. Arguments: mode, bootstrap servers, topic,
// partitions, tenant, count, order (JSON).
//   transactions: for each i, one event in a transaction it commits and one in a
//     transaction it aborts, on the same partition (i modulo the partitions).
//   cloudevents: count CloudEvents in binary mode (ce_* headers) and count in
//     structured mode, then a redelivery of the first of each, the first binary
//     id from another source, and one of each mode whose data is not an order.
//   open: one event in a transaction left open: the process halts without
//     committing or aborting, as a producer killed with -9 does.
//   delete-records: not a producer: deletes the records of partition
//     <partitions> before offset <count>, as retention does.
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class Producer {
    static final String TYPE = "dev.orderflow.OrderRequested.v1";

    public static void main(String[] args) throws Exception {
        String mode = args[0], servers = args[1], topic = args[2], tenant = args[4], order = args[6];
        int partitions = Integer.parseInt(args[3]), count = Integer.parseInt(args[5]);
        Properties p = new Properties();
        p.put("bootstrap.servers", servers);
        if (mode.equals("delete-records")) {
            try (Admin admin = Admin.create(p)) {
                admin.deleteRecords(Map.of(new TopicPartition(topic, partitions), RecordsToDelete.beforeOffset(count))).all().get();
            }
            return;
        }
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("acks", "all");
        if (!mode.equals("cloudevents")) {
            p.put("transactional.id", "orderflow-test-" + mode + "-" + topic);
            p.put("transaction.timeout.ms", "5000");
        }
        KafkaProducer<String, String> producer = new KafkaProducer<>(p);
        switch (mode) {
            case "transactions" -> transactions(producer, topic, partitions, tenant, count, order);
            case "cloudevents" -> cloudEvents(producer, topic, partitions, tenant, count, order);
            case "open" -> {
                producer.initTransactions();
                producer.beginTransaction();
                producer.send(new ProducerRecord<>(topic, 0, "open-0", envelope("open-0", tenant, order))).get();
                producer.flush();
                Runtime.getRuntime().halt(0); // no commit, no abort, no close
            }
            default -> throw new IllegalArgumentException("mode " + mode);
        }
        producer.close();
    }

    static String envelope(String id, String tenant, String order) {
        return "{\"eventId\":\"" + id + "\",\"tenant\":\"" + tenant + "\",\"order\":" + order + "}";
    }

    static void transactions(KafkaProducer<String, String> producer, String topic, int partitions, String tenant, int count, String order) throws Exception {
        producer.initTransactions();
        for (int i = 0; i < count; i++) {
            for (String outcome : new String[] {"committed", "aborted"}) {
                String id = outcome + "-" + i;
                producer.beginTransaction();
                producer.send(new ProducerRecord<>(topic, i % partitions, id, envelope(id, tenant, order))).get();
                if (outcome.equals("committed")) {
                    producer.commitTransaction();
                } else {
                    producer.abortTransaction();
                }
            }
        }
    }

    static void cloudEvents(KafkaProducer<String, String> producer, String topic, int partitions, String tenant, int count, String order) throws Exception {
        String bad = order.replace("\"quantity\":1", "\"quantity\":0");
        for (int i = 0; i < count; i++) {
            binary(producer, topic, i % partitions, "/shop/checkout", "bin-" + i, tenant, order);
            structured(producer, topic, i % partitions, "/shop/checkout", "st-" + i, tenant, order);
        }
        binary(producer, topic, 1, "/shop/checkout", "bin-0", tenant, order);
        structured(producer, topic, 2, "/shop/checkout", "st-0", tenant, order);
        binary(producer, topic, 0, "/shop/returns", "bin-0", tenant, order);
        binary(producer, topic, 0, "/shop/checkout", "bad-bin", tenant, bad);
        structured(producer, topic, 0, "/shop/checkout", "bad-st", tenant, bad);
        producer.flush();
    }

    static void binary(KafkaProducer<String, String> producer, String topic, int partition, String source, String id, String tenant, String data) throws Exception {
        ProducerRecord<String, String> r = new ProducerRecord<>(topic, partition, id, data);
        header(r, "ce_specversion", "1.0");
        header(r, "ce_id", id);
        header(r, "ce_source", source);
        header(r, "ce_type", TYPE);
        header(r, "ce_tenant", tenant);
        header(r, "ce_time", "2026-12-01T10:00:00Z");
        header(r, "content-type", "application/json");
        producer.send(r).get();
    }

    static void structured(KafkaProducer<String, String> producer, String topic, int partition, String source, String id, String tenant, String data) throws Exception {
        String value = "{\"specversion\":\"1.0\",\"id\":\"" + id + "\",\"source\":\"" + source + "\",\"type\":\"" + TYPE
            + "\",\"tenant\":\"" + tenant + "\",\"datacontenttype\":\"application/json\",\"data\":" + data + "}";
        ProducerRecord<String, String> r = new ProducerRecord<>(topic, partition, id, value);
        header(r, "content-type", "application/cloudevents+json; charset=UTF-8");
        producer.send(r).get();
    }

    static void header(ProducerRecord<String, String> r, String key, String value) {
        r.headers().add(key, value.getBytes(StandardCharsets.UTF_8));
    }
}
