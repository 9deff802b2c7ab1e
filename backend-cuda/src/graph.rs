//! Graphs: stream capture (`cuStreamBeginCapture` in relaxed mode, so that other threads' driver
//! calls do not invalidate it), instantiation of the captured graph (`cuGraphInstantiate`),
//! launches (`cuGraphLaunch`), argument updates of its kernel launches
//! (`cuGraphExecKernelNodeSetParams`) and destruction (`cuGraphExecDestroy`, `cuGraphDestroy`).
//! The backend's graph value is a boxed `CudaGraph`: the executable graph, the captured graph
//! its kernel nodes belong to (an update names a node of the graph it was instantiated from),
//! and those nodes in capture order. The driver's graph objects are not thread-safe: calls on
//! one graph are serialised by its spin lock.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};

use cudarc::driver::sys::{
    self, CUDA_KERNEL_NODE_PARAMS, CUgraph, CUgraphEdgeData, CUgraphExec, CUgraphNode, CUgraphNodeType, CUstream,
};
use ordo_core::{BackendError, BackendResult, ErrorCode, KernelArgs};

use crate::conv::{check, check_release};

/// A graph as the backend hands it out (boxed; its address is the runtime's raw value).
pub(crate) struct CudaGraph {
    exec: CUgraphExec,
    graph: CUgraph,
    /// The kernel nodes, in capture order, with their captured parameters (arguments cleared).
    launches: Vec<(CUgraphNode, CUDA_KERNEL_NODE_PARAMS)>,
    /// Held across every driver call on `exec` (a spin lock: the calls are short, and an
    /// uncontended `std::sync::Mutex` costs a tenth of an argument update).
    busy: AtomicBool,
}

/// `CudaGraph::busy` held.
struct Serial<'a>(&'a AtomicBool);

impl CudaGraph {
    fn serial(&self) -> Serial<'_> {
        while self.busy.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            std::thread::yield_now();
        }
        Serial(&self.busy)
    }
}

impl Drop for Serial<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

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
    // SAFETY: the graph just captured, destroyed here on failure and otherwise owned by the
    // returned value.
    let made = unsafe { instantiate(graph) };
    if made.is_err() {
        // SAFETY: as above; never used again.
        let _ = unsafe { sys::cuGraphDestroy(graph) };
    }
    made.map(|g| Box::into_raw(Box::new(g)) as u64)
}

/// # Safety
/// A live captured graph of the current context.
unsafe fn instantiate(graph: CUgraph) -> BackendResult<CudaGraph> {
    // SAFETY: forwarded contract.
    let launches = unsafe { kernel_nodes(graph) }?;
    let mut exec: CUgraphExec = std::ptr::null_mut();
    // SAFETY: the live graph; valid out-pointer.
    check("cuGraphInstantiateWithFlags", unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0) })?;
    Ok(CudaGraph { exec, graph, launches, busy: AtomicBool::new(false) })
}

/// The graph's kernel nodes in capture order: a topological order of its nodes (each after the
/// nodes it depends on), ties in the order the driver lists them. Work captured on one stream
/// is a chain, whose only topological order is the order of submission.
///
/// # Safety
/// A live graph of the current context.
unsafe fn kernel_nodes(graph: CUgraph) -> BackendResult<Vec<(CUgraphNode, CUDA_KERNEL_NODE_PARAMS)>> {
    let mut count = 0usize;
    // SAFETY: a NULL array asks for the count.
    check("cuGraphGetNodes", unsafe { sys::cuGraphGetNodes(graph, std::ptr::null_mut(), &mut count) })?;
    if count == 0 {
        return Ok(Vec::new()); // an empty capture (the driver refuses arrays of no elements)
    }
    let mut nodes: Vec<CUgraphNode> = vec![std::ptr::null_mut(); count];
    // SAFETY: room for `count` nodes.
    check("cuGraphGetNodes", unsafe { sys::cuGraphGetNodes(graph, nodes.as_mut_ptr(), &mut count) })?;
    nodes.truncate(count);
    let mut edges = 0usize;
    use std::ptr::null_mut;
    // SAFETY: NULL arrays ask for the count.
    check("cuGraphGetEdges_v2", unsafe {
        sys::cuGraphGetEdges_v2(graph, null_mut(), null_mut(), null_mut(), &mut edges)
    })?;
    let (mut from, mut to): (Vec<CUgraphNode>, Vec<CUgraphNode>) = (vec![null_mut(); edges], vec![null_mut(); edges]);
    // SAFETY: plain-old-data, all zeros is the default edge.
    let mut data: Vec<CUgraphEdgeData> = vec![unsafe { std::mem::zeroed() }; edges];
    if edges > 0 {
        // SAFETY: room for `edges` edges in each array.
        check("cuGraphGetEdges_v2", unsafe {
            sys::cuGraphGetEdges_v2(graph, from.as_mut_ptr(), to.as_mut_ptr(), data.as_mut_ptr(), &mut edges)
        })?;
    }
    let index: HashMap<CUgraphNode, usize> = nodes.iter().enumerate().map(|(i, &n)| (n, i)).collect();
    let mut waiting = vec![0usize; nodes.len()];
    let mut after: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (f, t) in from.iter().zip(&to).take(edges) {
        if let (Some(&f), Some(&t)) = (index.get(f), index.get(t)) {
            waiting[t] += 1;
            after[f].push(t);
        }
    }
    // Kahn's algorithm, always taking the first ready node in the driver's order.
    let mut ready: std::collections::BTreeSet<usize> = (0..nodes.len()).filter(|&i| waiting[i] == 0).collect();
    let mut out = Vec::new();
    while let Some(i) = ready.pop_first() {
        for &next in &after[i] {
            waiting[next] -= 1;
            if waiting[next] == 0 {
                ready.insert(next);
            }
        }
        let mut kind = CUgraphNodeType::CU_GRAPH_NODE_TYPE_EMPTY;
        // SAFETY: a node of the live graph; valid out-pointer.
        check("cuGraphNodeGetType", unsafe { sys::cuGraphNodeGetType(nodes[i], &mut kind) })?;
        if kind == CUgraphNodeType::CU_GRAPH_NODE_TYPE_KERNEL {
            // SAFETY: plain-old-data, filled in by the driver.
            let mut params: CUDA_KERNEL_NODE_PARAMS = unsafe { std::mem::zeroed() };
            // SAFETY: a kernel node of the live graph; valid out-pointer.
            check("cuGraphKernelNodeGetParams_v2", unsafe {
                sys::cuGraphKernelNodeGetParams_v2(nodes[i], &mut params)
            })?;
            // The arguments the driver points at are its own copies: an update brings new ones.
            (params.kernelParams, params.extra) = (std::ptr::null_mut(), std::ptr::null_mut());
            out.push((nodes[i], params));
        }
    }
    Ok(out)
}

/// The graph behind a raw value.
///
/// # Safety
/// A value `end` returned, not destroyed.
unsafe fn graph<'a>(raw: u64) -> &'a CudaGraph {
    // SAFETY: the caller's contract: a live box.
    unsafe { &*(raw as usize as *const CudaGraph) }
}

/// # Safety
/// A live graph and a live stream, of the current context.
pub(crate) unsafe fn launch(raw: u64, stream: CUstream) -> BackendResult<()> {
    // SAFETY: the caller's contract.
    let g = unsafe { graph(raw) };
    let _serial = g.serial();
    // SAFETY: the caller's contract.
    check("cuGraphLaunch", unsafe { sys::cuGraphLaunch(g.exec, stream) })
}

/// Calls `each` with the function of each kernel launch, in capture order.
///
/// # Safety
/// A live graph.
pub(crate) unsafe fn kernels(raw: u64, each: &mut dyn FnMut(u64)) {
    // SAFETY: the caller's contract.
    for (_, params) in &unsafe { graph(raw) }.launches {
        each(params.func as u64);
    }
}

/// Sets the arguments of launch `index` (see `Backend::graph_set_args`).
///
/// # Safety
/// A live graph of the current context; `params` points to one value per parameter of `kernel`.
pub(crate) unsafe fn set_args(raw: u64, index: u32, kernel: u64, params: &KernelArgs<'_>) -> BackendResult<()> {
    // SAFETY: the caller's contract.
    let g = unsafe { graph(raw) };
    let Some(&(node, captured)) = g.launches.get(index as usize) else {
        return Err(BackendError::new(ErrorCode::InvalidArgument, 0, "the graph has no kernel launch at this index"));
    };
    if captured.func as u64 != kernel {
        return Err(BackendError::new(
            ErrorCode::InvalidArgument,
            0,
            "the graph's launch at this index runs another kernel",
        ));
    }
    let values = params.params();
    let kernel_params = if values.is_empty() { std::ptr::null_mut() } else { values.as_ptr().cast_mut() };
    let update = CUDA_KERNEL_NODE_PARAMS { kernelParams: kernel_params.cast::<*mut c_void>(), ..captured };
    let _serial = g.serial();
    // SAFETY: a kernel node of the graph `exec` was instantiated from; the driver copies the
    // argument values (the caller's contract) before it returns.
    check("cuGraphExecKernelNodeSetParams_v2", unsafe { sys::cuGraphExecKernelNodeSetParams_v2(g.exec, node, &update) })
}

/// # Safety
/// A live graph of the current context, never passed again.
pub(crate) unsafe fn destroy(raw: u64) -> BackendResult<()> {
    // SAFETY: the caller's contract: the box `end` made, taken back once.
    let g = unsafe { Box::from_raw(raw as usize as *mut CudaGraph) };
    // SAFETY: the graph's own objects, destroyed once.
    let exec = check_release("cuGraphExecDestroy", unsafe { sys::cuGraphExecDestroy(g.exec) });
    // SAFETY: as above.
    let captured = check_release("cuGraphDestroy", unsafe { sys::cuGraphDestroy(g.graph) });
    exec.and(captured)
}
