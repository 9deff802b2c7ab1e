//! Graphs: stream capture (`cuStreamBeginCapture` in relaxed mode, so that other threads' driver
//! calls do not invalidate it), instantiation of the captured graph (`cuGraphInstantiate`; the
//! captured `CUgraph` is destroyed at once, the executable graph stands alone), launches
//! (`cuGraphLaunch`) and destruction (`cuGraphExecDestroy`). The runtime hands out the
//! executable graph as the backend's graph value.

use cudarc::driver::sys::{self, CUgraph, CUgraphExec, CUstream};
use ordo_core::BackendResult;

use crate::conv::{check, check_release};

/// # Safety
/// A live stream of the current context that is not capturing.
pub(crate) unsafe fn begin(stream: CUstream) -> BackendResult<()> {
    let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
    // SAFETY: the caller's stream.
    check("cuStreamBeginCapture_v2", unsafe { sys::cuStreamBeginCapture_v2(stream, mode) })
}

/// Ends the capture and instantiates what it captured; the stream stops capturing either way.
///
/// # Safety
/// A live stream of the current context that is capturing.
pub(crate) unsafe fn end(stream: CUstream) -> BackendResult<u64> {
    let mut graph: CUgraph = std::ptr::null_mut();
    // SAFETY: the caller's stream; valid out-pointer.
    check("cuStreamEndCapture", unsafe { sys::cuStreamEndCapture(stream, &mut graph) })?;
    let mut exec: CUgraphExec = std::ptr::null_mut();
    // SAFETY: the graph just captured; valid out-pointer.
    let made = check("cuGraphInstantiateWithFlags", unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0) });
    // SAFETY: the captured graph, destroyed once (the executable graph does not need it).
    let _ = unsafe { sys::cuGraphDestroy(graph) };
    made?;
    Ok(exec as u64)
}

/// # Safety
/// A live executable graph and a live stream, of the current context.
pub(crate) unsafe fn launch(exec: u64, stream: CUstream) -> BackendResult<()> {
    // SAFETY: the caller's contract.
    check("cuGraphLaunch", unsafe { sys::cuGraphLaunch(exec as CUgraphExec, stream) })
}

/// # Safety
/// A live executable graph of the current context, never passed again.
pub(crate) unsafe fn destroy(exec: u64) -> BackendResult<()> {
    // SAFETY: the caller's contract.
    check_release("cuGraphExecDestroy", unsafe { sys::cuGraphExecDestroy(exec as CUgraphExec) })
}
