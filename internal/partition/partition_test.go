package partition

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/forecastd/forecastd/sources"
)

// TestAddStats: every counter of sources.Stats is summed, the parse
// errors by reason too (a field added to Stats is summed without a change
// here, or the test fails).
func TestAddStats(t *testing.T) {
	var a, b sources.Stats
	av, bv := reflect.ValueOf(&a).Elem(), reflect.ValueOf(&b).Elem()
	for i := range av.NumField() {
		switch f := av.Field(i); f.Kind() {
		case reflect.Uint64:
			f.SetUint(uint64(i + 1))
			bv.Field(i).SetUint(uint64(100 * (i + 1)))
		case reflect.Int64:
			f.SetInt(int64(i + 1))
			bv.Field(i).SetInt(int64(100 * (i + 1)))
		case reflect.Map:
		case reflect.Bool:
			if av.Type().Field(i).Name != "Connected" {
				t.Fatalf("sources.Stats.%s is a bool: addStats does not sum it", av.Type().Field(i).Name)
			}
		default:
			t.Fatalf("sources.Stats.%s is a %v: addStats does not sum it", av.Type().Field(i).Name, f.Kind())
		}
	}
	a.ParseErrors = map[sources.Reason]uint64{1: 1}
	b.ParseErrors = map[sources.Reason]uint64{1: 2, 2: 5}
	var sum sources.Stats
	addStats(&sum, a)
	addStats(&sum, b)
	sv := reflect.ValueOf(sum)
	for i := range sv.NumField() {
		switch f := sv.Field(i); f.Kind() {
		case reflect.Uint64:
			if f.Uint() != uint64(101*(i+1)) {
				t.Errorf("%s = %d, want %d", sv.Type().Field(i).Name, f.Uint(), 101*(i+1))
			}
		case reflect.Int64:
			if f.Int() != int64(101*(i+1)) {
				t.Errorf("%s = %d, want %d", sv.Type().Field(i).Name, f.Int(), 101*(i+1))
			}
		}
	}
	if sum.ParseErrors[1] != 3 || sum.ParseErrors[2] != 5 || len(sum.ParseErrors) != 2 {
		t.Errorf("ParseErrors = %v, want 1: 3, 2: 5", sum.ParseErrors)
	}
}

// TestKeyPartsBounded: in scale-out mode a flood of keys holds at most
// twice the bound, a key noted among the last max keys is found, and one
// noted all along (a live series) is never forgotten.
func TestKeyPartsBounded(t *testing.T) {
	const max = 1000
	k := keyParts{max: max}
	a, b := &part{n: 1}, &part{n: 2}
	for i := range 10 * max {
		k.note(fmt.Sprintf("flood.%d", i), a)
		if i%(max/2) == 0 {
			k.note("live", b)
		}
		if n := k.len(); n > 2*max {
			t.Fatalf("%d keys held after %d noted, bound %d", n, i+1, 2*max)
		}
	}
	if k.get("live") != b {
		t.Fatal("the live series' key was forgotten")
	}
	for i := 9 * max; i < 10*max; i++ {
		if k.get(fmt.Sprintf("flood.%d", i)) != a {
			t.Fatalf("flood.%d, among the last %d keys, is not found", i, max)
		}
	}
	if k.get("flood.0") != nil {
		t.Fatal("the first key of the flood is still held")
	}
}
