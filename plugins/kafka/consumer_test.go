package kafka

import (
	"testing"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

func TestErrorLogRateLimitsEachCode(t *testing.T) {
	var l errorLog
	t0 := time.Unix(1000, 0)
	down, transport := ckafka.ErrAllBrokersDown, ckafka.ErrTransport
	if n, ok := l.admit(down, t0); !ok || n != 0 {
		t.Fatalf("first error: logged %v with %d suppressed, want logged with 0", ok, n)
	}
	for i := 1; i <= 50; i++ { // every 100 ms for 5 s
		if _, ok := l.admit(down, t0.Add(time.Duration(i)*100*time.Millisecond)); ok {
			t.Fatalf("repeat %d within %s was logged", i, errorRepeatEvery)
		}
	}
	if _, ok := l.admit(transport, t0.Add(time.Second)); !ok {
		t.Fatal("the first error of another code was not logged")
	}
	n, ok := l.admit(down, t0.Add(errorRepeatEvery))
	if !ok || n != 50 {
		t.Fatalf("after %s: logged %v with %d suppressed, want logged with 50", errorRepeatEvery, ok, n)
	}
	if n, ok := l.admit(down, t0.Add(2*errorRepeatEvery)); !ok || n != 0 {
		t.Fatalf("next period: logged %v with %d suppressed, want logged with 0", ok, n)
	}
}
