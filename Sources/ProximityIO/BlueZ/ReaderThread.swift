import Glibc
import Proximity
import Synchronization

/// The scanner's dedicated thread: waits for events on the socket (with no timeout: an idle scan never wakes it),
/// passes each complete report's data to the callback, and ends when asked or when the socket fails. `stop()`
/// interrupts the wait, so stopping takes no longer than the callback in progress.
final class ReaderThread: Sendable {
    private let thread: pthread_t

    private final class Context: Sendable {
        let socket: any HCISocket
        let onAdvert: @Sendable ([UInt8]) -> Void
        let stopRequested: Atomic<Bool> = Atomic(false)
        init(socket: any HCISocket, onAdvert: @escaping @Sendable ([UInt8]) -> Void) {
            self.socket = socket
            self.onAdvert = onAdvert
        }
    }

    private let context: Context

    init(socket: any HCISocket, onAdvert: @escaping @Sendable ([UInt8]) -> Void) throws(ProximityError) {
        let context = Context(socket: socket, onAdvert: onAdvert)
        let argument = Unmanaged.passRetained(context).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { argument in
                let context = Unmanaged<Context>.fromOpaque(argument!).takeRetainedValue()
                ReaderThread.run(context)
                return nil
            }, argument)
        guard result == 0 else {
            Unmanaged<Context>.fromOpaque(argument).release()
            throw .failed("could not start the scan reader thread (errno \(result))")
        }
        self.thread = thread
        self.context = context
    }

    /// Asks the thread to end, wakes it, and waits until it has ended. No callback starts after this returns.
    func stop() {
        context.stopRequested.store(true, ordering: .releasing)
        context.socket.interrupt()
        pthread_join(thread, nil)
    }

    private static func run(_ context: Context) {
        while !context.stopRequested.load(ordering: .acquiring) {
            let packet: [UInt8]?
            do {
                packet = try context.socket.read(timeout: nil)
            } catch {
                return
            }
            guard let packet, case .advertisingReports(let reports)? = try? HCIEvent(packet: packet) else { continue }
            for report in reports where report.isComplete {
                guard !context.stopRequested.load(ordering: .acquiring) else { return }
                context.onAdvert(report.data)
            }
        }
    }
}
