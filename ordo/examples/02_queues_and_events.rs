//! Two kernels in order across two queues: the second queue waits for an event the first
//! records, and two events time the work.
use ordo::{Context, DeviceBuffer, builtin};

fn main() -> Result<(), ordo::Error> {
    let ctx = Context::new()?;
    let dev = ctx.default_device()?;
    let (producer, consumer) = (dev.queue()?, dev.queue()?);
    let (start, produced, end) = (dev.event()?, dev.event()?, dev.event()?);

    let x = DeviceBuffer::from_slice(&dev, &[1.0f32; 1024])?;
    let mut doubled = DeviceBuffer::<f32>::zeroed(&dev, 1024)?;
    let mut sum = DeviceBuffer::<f32>::zeroed(&dev, 1)?;

    producer.record(&start)?;
    builtin::vector_add(&producer, &x, &x, &mut doubled)?; // doubled = 2 * x
    producer.record(&produced)?;
    consumer.wait(&produced)?; // the consumer's next work runs after the producer's
    builtin::reduce_sum(&consumer, &doubled, &mut sum)?;
    consumer.record(&end)?;
    end.synchronize()?;

    assert_eq!(sum.to_vec()?, [2048.0]);
    println!("sum = 2048 after {:.3} ms on {}", end.elapsed_since(&start).unwrap_or(0.0), dev.kind().name());
    Ok(())
}
