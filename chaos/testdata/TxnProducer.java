// A transactional producer on Kafka's own client, as Flink, Kafka Streams and
// outbox relays produce: for each i, one event in a transaction it commits and
// one in a transaction it aborts, on the same partition (i modulo the partitions).
// Arguments: bootstrap servers, topic, partitions, tenant, count.
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnProducer {
    public static void main(String[] args) throws Exception {
        String servers = args[0], topic = args[1], tenant = args[3], order = args[5];
        int partitions = Integer.parseInt(args[2]), count = Integer.parseInt(args[4]);
        Properties p = new Properties();
        p.put("bootstrap.servers", servers);
        p.put("transactional.id", "orderflow-test-" + topic);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            for (int i = 0; i < count; i++) {
                for (String outcome : new String[] {"committed", "aborted"}) {
                    String id = outcome + "-" + i;
                    String value = "{\"eventId\":\"" + id + "\",\"tenant\":\"" + tenant + "\",\"order\":" + order + "}";
                    producer.beginTransaction();
                    producer.send(new ProducerRecord<>(topic, i % partitions, id, value)).get();
                    if (outcome.equals("committed")) {
                        producer.commitTransaction();
                    } else {
                        producer.abortTransaction();
                    }
                }
            }
        }
    }
}
