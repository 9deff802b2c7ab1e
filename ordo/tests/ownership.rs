//! Objects you can own: every typed object holds its own runtime reference, so a program keeps a
//! context and its objects in one struct, moves them between threads and shares them; and a
//! property test interleaving re-inits (a raw caller taking every reference away) with every
//! typed operation, against a model of what each must do.

use std::sync::Arc;

use ordo::host::{HostArena, HostBackend, builtin};
use ordo::{Context, DeviceBuffer, ErrorCode, Module, OwnedRuntime, State};
use proptest::prelude::*;

fn host_backend() -> &'static HostBackend {
    let arena: &'static HostArena<{ 1 << 16 }> = Box::leak(Box::new(HostArena::new()));
    Box::leak(Box::new(HostBackend::new(arena, builtin::PROGRAMS, None)))
}

/// `Send` and `Sync` as each type's docs state them, checked by the compiler.
#[test]
fn every_object_is_send_and_sync() {
    fn both<T: Send + Sync>() {}
    both::<Context<'static>>();
    both::<ordo::Device<'static>>();
    both::<DeviceBuffer<'static, f32>>();
    both::<ordo::DeviceSlice<'static, f32>>();
    both::<ordo::DeviceSliceMut<'static, f32>>();
    both::<ordo::HostBuffer<'static, f32>>();
    both::<ordo::Queue<'static>>();
    both::<ordo::Event<'static>>();
    both::<Module<'static>>();
    both::<ordo::Function<'static>>();
    both::<ordo::TypedFunction<'static, (ordo::In<'static, f32>, u32)>>();
    both::<ordo::Error>();
}

/// What a program keeps: a context and its objects together, with no lifetime tying one to the
/// other (the E0597/E0505 of borrowed objects).
struct Pipeline {
    ctx: Context<'static>,
    module: Module<'static>,
    add: ordo::Function<'static>,
    queue: ordo::Queue<'static>,
    data: DeviceBuffer<'static, f32>,
}

impl Pipeline {
    fn new() -> Result<Self, ordo::Error> {
        let ctx = Context::new()?;
        let dev = ctx.device(0)?;
        let module = Module::load_builtin(&dev)?;
        let add = module.function("vector_add_f32")?;
        Ok(Self { queue: dev.queue()?, data: DeviceBuffer::from_slice(&dev, &[1.0; 256])?, module, add, ctx })
    }
}

#[test]
fn a_struct_owns_a_context_and_its_objects_and_moves_between_threads() {
    let p = Pipeline::new().unwrap();
    let p = std::thread::spawn(move || {
        let mut out = DeviceBuffer::<f32>::zeroed(p.queue.device(), 256).unwrap();
        ordo::builtin::vector_add(&p.queue, &p.data, &p.data, &mut out).unwrap();
        assert_eq!(out.to_vec().unwrap(), vec![2.0; 256]);
        p
    })
    .join()
    .unwrap();
    assert_eq!(p.add.param_count(), Some(4));
    assert!(p.ctx.is_current());
    // Fields go in any order: the context first here, the buffer last.
    let Pipeline { ctx, module, add, queue, data } = p;
    drop((ctx, module));
    queue.synchronize().unwrap();
    assert_eq!(add.param_count(), Some(4));
    drop((add, queue, data));
}

#[test]
fn one_queue_and_buffer_are_shared_by_threads() {
    let ctx = Context::new().unwrap();
    let dev = ctx.device(0).unwrap();
    let shared = Arc::new((dev.queue().unwrap(), DeviceBuffer::from_slice(&dev, &[3u32; 64]).unwrap()));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || {
                for _ in 0..20 {
                    assert_eq!(shared.1.to_vec().unwrap(), vec![3; 64]);
                    shared.0.synchronize().unwrap();
                }
            })
        })
        .collect();
    drop(ctx); // the threads' objects keep the runtime
    for t in threads {
        t.join().unwrap();
    }
}

#[derive(Clone, Debug)]
enum Op {
    NewBuffer(u32),
    Fill(usize, u32),
    Read(usize),
    Copy(usize, usize),
    Add(usize, usize, usize),
    Slice(usize),
    NewQueue,
    Sync(usize),
    NewModule,
    Lookup(usize),
    Drop(usize),
    Reinit,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => any::<u32>().prop_map(Op::NewBuffer),
        3 => (any::<usize>(), any::<u32>()).prop_map(|(i, v)| Op::Fill(i, v)),
        3 => any::<usize>().prop_map(Op::Read),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(i, j)| Op::Copy(i, j)),
        2 => (any::<usize>(), any::<usize>(), any::<usize>()).prop_map(|(a, b, c)| Op::Add(a, b, c)),
        1 => any::<usize>().prop_map(Op::Slice),
        1 => Just(Op::NewQueue),
        1 => any::<usize>().prop_map(Op::Sync),
        1 => Just(Op::NewModule),
        1 => any::<usize>().prop_map(Op::Lookup),
        2 => any::<usize>().prop_map(Op::Drop),
        1 => Just(Op::Reinit),
    ]
}

const LEN: usize = 8;

/// A typed object with the epoch it was made in, and (buffers) what it holds per the model.
enum Obj<'r> {
    Buffer(DeviceBuffer<'r, f32>, u32, [f32; LEN]),
    Queue(ordo::Queue<'r>, u32),
    Module(Module<'r>, u32),
}

impl Obj<'_> {
    fn epoch(&self) -> u32 {
        match self {
            Obj::Buffer(_, e, _) | Obj::Queue(_, e) | Obj::Module(_, e) => *e,
        }
    }
}

fn stale<T: std::fmt::Debug>(r: Result<T, ordo::Error>) -> Result<(), TestCaseError> {
    prop_assert!(r.is_err(), "a stale object's call succeeded: {r:?}");
    Ok(())
}

fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let rt = OwnedRuntime::new(&[host_backend()]);
    let mut ctx = Context::with_runtime(&rt).unwrap();
    let mut epoch = 0u32;
    let mut objs: Vec<Obj<'_>> = Vec::new();
    let pick = |objs: &Vec<Obj<'_>>, i: usize, buffers: bool| -> Option<usize> {
        let all: Vec<usize> = (0..objs.len()).filter(|&k| matches!(objs[k], Obj::Buffer(..)) == buffers).collect();
        (!all.is_empty()).then(|| all[i % all.len()])
    };
    for op in ops {
        let dev = ctx.device(0).unwrap();
        let queue = dev.queue().unwrap();
        match op.clone() {
            Op::NewBuffer(v) => {
                let mut b = DeviceBuffer::<f32>::zeroed(&dev, LEN).unwrap();
                b.fill(v as f32).unwrap();
                objs.push(Obj::Buffer(b, epoch, [v as f32; LEN]));
            }
            Op::Fill(i, v) => {
                if let Some(k) = pick(&objs, i, true)
                    && let Obj::Buffer(b, e, model) = &mut objs[k]
                {
                    let r = b.fill(v as f32);
                    if *e == epoch {
                        r.unwrap();
                        *model = [v as f32; LEN];
                    } else {
                        stale(r)?;
                    }
                }
            }
            Op::Read(i) => {
                if let Some(k) = pick(&objs, i, true)
                    && let Obj::Buffer(b, e, model) = &objs[k]
                {
                    let r = b.to_vec();
                    if *e == epoch {
                        prop_assert_eq!(r.unwrap(), model.to_vec());
                    } else {
                        stale(r)?;
                    }
                }
            }
            Op::Copy(i, j) => {
                if let (Some(a), Some(b)) = (pick(&objs, i, true), pick(&objs, j, true))
                    && a != b
                {
                    let (lo, hi) = objs.split_at_mut(a.max(b));
                    let (x, y) = (&mut lo[a.min(b)], &mut hi[0]);
                    let (Obj::Buffer(src, es, ms), Obj::Buffer(dst, ed, md)) = (if a < b { (x, y) } else { (y, x) })
                    else {
                        unreachable!()
                    };
                    let r = dst.copy_from_device(src);
                    if *es == epoch && *ed == epoch {
                        r.unwrap();
                        *md = *ms;
                    } else {
                        stale(r)?;
                    }
                }
            }
            Op::Add(i, j, k) => {
                if let (Some(a), Some(b), Some(c)) = (pick(&objs, i, true), pick(&objs, j, true), pick(&objs, k, true))
                    && c != a
                    && c != b
                {
                    let (ea, eb, ec) = (objs[a].epoch(), objs[b].epoch(), objs[c].epoch());
                    let (ma, mb) = match (&objs[a], &objs[b]) {
                        (Obj::Buffer(_, _, ma), Obj::Buffer(_, _, mb)) => (*ma, *mb),
                        _ => unreachable!(),
                    };
                    let mut out = match objs.remove(c) {
                        Obj::Buffer(buf, _, mc) => (buf, mc),
                        _ => unreachable!(),
                    };
                    let (a, b) = (if a > c { a - 1 } else { a }, if b > c { b - 1 } else { b });
                    let (Obj::Buffer(x, ..), Obj::Buffer(y, ..)) = (&objs[a], &objs[b]) else { unreachable!() };
                    let r = ordo::builtin::vector_add(&queue, x, y, &mut out.0);
                    if ea == epoch && eb == epoch && ec == epoch {
                        r.unwrap();
                        out.1 = std::array::from_fn(|n| ma[n] + mb[n]);
                    } else {
                        stale(r)?;
                    }
                    objs.push(Obj::Buffer(out.0, ec, out.1));
                }
            }
            Op::Slice(i) => {
                if let Some(k) = pick(&objs, i, true)
                    && let Obj::Buffer(b, e, model) = &mut objs[k]
                {
                    let r = b.slice_mut(2..4).unwrap().copy_from(&[9.0, 9.0]);
                    if *e == epoch {
                        r.unwrap();
                        model[2..4].copy_from_slice(&[9.0, 9.0]);
                    } else {
                        stale(r)?;
                    }
                }
            }
            Op::NewQueue => objs.push(Obj::Queue(dev.queue().unwrap(), epoch)),
            Op::Sync(i) => {
                if let Some(k) = pick(&objs, i, false) {
                    match &objs[k] {
                        Obj::Queue(q, e) if *e == epoch => q.synchronize().unwrap(),
                        Obj::Queue(q, _) => stale(q.synchronize())?,
                        Obj::Module(m, e) if *e == epoch => drop(m.function("reduce_sum_f32").unwrap()),
                        Obj::Module(m, _) => stale(m.function("reduce_sum_f32"))?,
                        Obj::Buffer(..) => unreachable!(),
                    }
                }
            }
            Op::NewModule => objs.push(Obj::Module(Module::load_builtin(&dev).unwrap(), epoch)),
            Op::Lookup(i) => {
                if let Some(k) = pick(&objs, i, false)
                    && let Obj::Module(m, e) = &objs[k]
                {
                    let r = m.function("vector_add_f32").and_then(|f| f.dims_for(4));
                    if *e == epoch {
                        r.unwrap();
                    } else {
                        stale(r)?;
                    }
                }
            }
            Op::Drop(i) => {
                if !objs.is_empty() {
                    let k = i % objs.len();
                    objs.remove(k);
                }
            }
            Op::Reinit => {
                drop((queue, dev));
                rt.shutdown_all(&mut || true).unwrap();
                rt.init().unwrap();
                ctx = Context::with_runtime(&rt).unwrap();
                rt.shutdown().unwrap(); // the raw init's reference; the context's stays
                epoch += 1;
                continue;
            }
        }
        drop(queue);
        // The runtime holds exactly the model's current objects (stale ones hold nothing).
        let live = rt.live_objects().unwrap();
        let current = |f: fn(&Obj<'_>) -> bool| objs.iter().filter(|o| o.epoch() == epoch && f(o)).count();
        prop_assert_eq!(live.allocations, current(|o| matches!(o, Obj::Buffer(..))));
        prop_assert_eq!(live.queues, current(|o| matches!(o, Obj::Queue(..))));
    }
    drop(objs);
    prop_assert!(ctx.is_current());
    drop(ctx);
    prop_assert_eq!(rt.state(), State::Uninit, "the last reference went with the last object");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 4 } else { 200 }, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn reinits_interleaved_with_typed_operations_agree_with_the_model(ops in proptest::collection::vec(op(), 1..40)) {
        run(&ops)?;
    }
}

#[test]
fn a_context_clone_never_initialises_a_torn_down_runtime() {
    let rt = OwnedRuntime::new(&[host_backend()]);
    let ctx = Context::with_runtime(&rt).unwrap();
    rt.shutdown_all(&mut || true).unwrap();
    let clone = ctx.clone();
    assert!(!clone.is_current());
    assert_eq!(rt.state(), State::Uninit, "the clone did not bring the runtime up");
    assert_eq!(clone.devices().unwrap_err().code(), ErrorCode::InvalidHandle);
}
