// Package svr holds forecastd's online regressors and their kernels.
//
// Every regressor implements [Regressor]: it learns one sample at a time,
// predicts, and reports its input dimension. A call that returns an error
// leaves the model exactly as it was, and no input slice is ever retained:
// the caller may reuse it as soon as the call returns.
//
// [AOSVR] is the exact online ε-SVR of Ma, Theiler and Perkins (2003). It
// can also unlearn samples ([Forgetter]), which is what a sliding
// forgetting window needs. [SOGSVR] (Engel, Mannor and Meir 2002) and
// [NORMA] (Kivinen, Smola and Williamson) are approximate, with memory and
// cost per sample bounded by their configuration.
//
// The package knows nothing of time, transport or configuration files; it
// depends only on the standard library and gonum.
package svr
