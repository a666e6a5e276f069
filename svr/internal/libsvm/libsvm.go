//go:build libsvm

// Package libsvm is a minimal cgo binding to LIBSVM's ε-SVR with the RBF
// kernel, for benchmarks only: it lets a Go benchmark time a LIBSVM batch
// retrain on the same window as an online model, in process, without the
// cost of spawning svm-train.
//
// Every file carries the build constraint "libsvm", so normal builds and
// tests never need libsvm's headers. Build with
//
//	apt-get install -y libsvm-dev
//	go test -tags libsvm ./svr/internal/libsvm
//
// LIBSVM's training log is silenced (svm_set_print_string_function with a
// no-op) for the whole process when this package is initialised.
package libsvm

/*
#cgo LDFLAGS: -lsvm
#include <stdlib.h>
#include <libsvm/svm.h>

static void forecastd_libsvm_quiet(const char *s) { (void)s; }
static void forecastd_libsvm_silence(void) { svm_set_print_string_function(&forecastd_libsvm_quiet); }
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"unsafe"
)

func init() { C.forecastd_libsvm_silence() }

// Params are the ε-SVR training parameters.
type Params struct {
	// Gamma is γ of the RBF kernel exp(−γ‖a−b‖²); it must be positive.
	Gamma float64
	// C is the box constraint; it must be positive.
	C float64
	// Epsilon is the half-width ε of the insensitive tube (svm-train -p);
	// it must not be negative.
	Epsilon float64
	// Tol is the stopping tolerance (svm-train -e); 0 means LIBSVM's
	// default 0.001.
	Tol float64
}

// Model is a trained LIBSVM ε-SVR, f(x) = Σ_j coef_j·K(x_j, x) − Rho.
//
// A Model owns C memory: the LIBSVM model and the training samples it
// points into. Call Free when done; a Model that becomes unreachable is
// freed by a cleanup otherwise. A Model is not safe for concurrent use:
// Predict reuses one input buffer.
type Model struct {
	// NSV is the number of support vectors (LIBSVM's total_sv).
	NSV int
	// Rho is LIBSVM's rho; the bias of f is b = −Rho.
	Rho float64

	h *handle
}

// handle is the C memory of a Model.
type handle struct {
	c       cmem
	dim     int
	pred    *C.struct_svm_node // the dim+1 nodes after the samples, for Predict
	cleanup runtime.Cleanup
}

// cmem holds the C allocations, freed together.
type cmem struct {
	model *C.struct_svm_model
	nodes *C.struct_svm_node  // every sample's dim+1 nodes, then dim+1 for Predict
	xs    **C.struct_svm_node // the problem's row pointers into nodes
	ys    *C.double
}

func (m cmem) free() {
	if m.model != nil {
		C.svm_free_and_destroy_model(&m.model)
	}
	C.free(unsafe.Pointer(m.nodes))
	C.free(unsafe.Pointer(m.xs))
	C.free(unsafe.Pointer(m.ys))
}

// Train trains an ε-SVR with the RBF kernel on the samples (xs[i], ys[i]),
// as `svm-train -s 3 -t 2 -g Gamma -c C -p Epsilon -e Tol` does (shrinking
// on, 100 MB kernel cache). The samples are copied; the caller keeps xs and
// ys. It panics if len(xs) != len(ys) or the xs differ in length, and
// returns an error for an empty training set or parameters LIBSVM rejects.
func Train(xs [][]float64, ys []float64, p Params) (Model, error) {
	if len(xs) != len(ys) {
		panic(fmt.Sprintf("libsvm: %d inputs, %d targets", len(xs), len(ys)))
	}
	if len(xs) == 0 {
		return Model{}, errors.New("libsvm: no training samples")
	}
	dim := len(xs[0])
	for i, x := range xs {
		if len(x) != dim {
			panic(fmt.Sprintf("libsvm: input %d has length %d, input 0 has %d", i, len(x), dim))
		}
	}
	if math.IsNaN(p.Gamma) || math.IsNaN(p.C) || math.IsNaN(p.Epsilon) || math.IsNaN(p.Tol) || p.Tol < 0 {
		return Model{}, fmt.Errorf("libsvm: bad parameters %+v", p)
	}
	tol := p.Tol
	if tol == 0 {
		tol = 0.001
	}
	l := len(xs)
	row := dim + 1
	var m cmem
	nodeSize := C.size_t(unsafe.Sizeof(C.struct_svm_node{}))
	m.nodes = (*C.struct_svm_node)(C.calloc(C.size_t((l+1)*row), nodeSize))
	m.xs = (**C.struct_svm_node)(C.calloc(C.size_t(l), C.size_t(unsafe.Sizeof(m.nodes))))
	m.ys = (*C.double)(C.calloc(C.size_t(l), C.size_t(unsafe.Sizeof(C.double(0)))))
	if m.nodes == nil || m.xs == nil || m.ys == nil {
		m.free()
		return Model{}, errors.New("libsvm: out of C memory")
	}
	nodes := unsafe.Slice(m.nodes, (l+1)*row)
	rows := unsafe.Slice(m.xs, l)
	yv := unsafe.Slice(m.ys, l)
	for i, x := range xs {
		r := nodes[i*row : (i+1)*row]
		for k, v := range x {
			r[k].index = C.int(k + 1)
			r[k].value = C.double(v)
		}
		r[dim].index = -1
		rows[i] = &r[0]
		yv[i] = C.double(ys[i])
	}
	nodes[l*row+dim].index = -1 // terminator of the Predict buffer

	prob := C.struct_svm_problem{l: C.int(l), y: m.ys, x: m.xs}
	param := C.struct_svm_parameter{
		svm_type:    C.EPSILON_SVR,
		kernel_type: C.RBF,
		gamma:       C.double(p.Gamma),
		cache_size:  100,
		eps:         C.double(tol),
		C:           C.double(p.C),
		p:           C.double(p.Epsilon),
		shrinking:   1,
	}
	if msg := C.svm_check_parameter(&prob, &param); msg != nil {
		m.free()
		return Model{}, fmt.Errorf("libsvm: %s", C.GoString(msg))
	}
	m.model = C.svm_train(&prob, &param)
	if m.model == nil {
		m.free()
		return Model{}, errors.New("libsvm: svm_train failed")
	}
	h := &handle{c: m, dim: dim, pred: &nodes[l*row]}
	h.cleanup = runtime.AddCleanup(h, cmem.free, m)
	return Model{
		NSV: int(m.model.l),
		Rho: float64(*m.model.rho),
		h:   h,
	}, nil
}

// Predict returns f(x) = Σ_j coef_j·exp(−γ‖x_j − x‖²) − Rho, by
// svm_predict. O(NSV·len(x)) time, no allocation. It panics if x has the
// wrong length or the model has been freed.
func (m Model) Predict(x []float64) float64 {
	if m.h == nil || m.h.c.model == nil {
		panic("libsvm: Predict on a freed or zero Model")
	}
	if len(x) != m.h.dim {
		panic(fmt.Sprintf("libsvm: input has length %d, model expects %d", len(x), m.h.dim))
	}
	buf := unsafe.Slice(m.h.pred, len(x))
	for k, v := range x {
		buf[k].index = C.int(k + 1)
		buf[k].value = C.double(v)
	}
	r := float64(C.svm_predict(m.h.c.model, m.h.pred))
	runtime.KeepAlive(m.h)
	return r
}

// Free releases the model's C memory. The Model must not be used after;
// Free on a freed or zero Model does nothing.
func (m Model) Free() {
	if m.h == nil || m.h.c.model == nil {
		return
	}
	m.h.cleanup.Stop()
	m.h.c.free()
	m.h.c = cmem{}
	m.h.pred = nil
}
