import Foundation
import Proximity

/// Sends commands to one controller and waits for their answers: the command/response half of HCI. The bytes are
/// `HCICommand`'s; this only writes, reads and keeps the time.
struct HCIController: Sendable {
    /// The socket, used by one thread at a time.
    let socket: any HCISocket
    /// `N` of `hciN`, for error messages.
    let adapter: Int
    /// How long a command may go unanswered.
    let timeout: Duration

    /// Writes `command` and waits for the Command Complete or Command Status with its opcode, skipping every other
    /// packet. Fails if the controller does not answer within `timeout`, or answers with a status other than success
    /// and those in `allowed`.
    func run(_ command: HCICommand, allowing allowed: Set<HCIStatus> = []) throws(ProximityError) {
        do {
            try socket.write(command.packet)
        } catch {
            throw ProximityErrorMapping.error(error, adapter: adapter)
        }
        let deadline = ContinuousClock.now + timeout
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else {
                throw .failed("controller hci\(adapter) did not answer \(command) within \(timeout)")
            }
            let packet: [UInt8]?
            do {
                packet = try socket.read(timeout: left)
            } catch {
                throw ProximityErrorMapping.error(error, adapter: adapter)
            }
            guard let packet else { continue }
            switch command.answer(in: packet) {
            case .unrelated:
                continue
            case .noStatus:
                throw .failed("controller hci\(adapter) answered \(command) without a status")
            case .status(let status):
                guard status == .success || allowed.contains(status) else {
                    throw .failed("controller refused \(command) (\(status))")
                }
                return
            }
        }
    }
}

/// Runs blocking socket work (a command and its answer, at most the command timeout) on a thread of its own, so that
/// it never holds up Swift's cooperative pool. Not Dispatch's global queue: Linux's libdispatch adds threads only
/// when its running ones block, so with busy cores a radio's start or stop could wait behind unrelated work for
/// as long as that lasts. Radios start and stop rarely; a thread each time costs nothing that matters.
func offloaded<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
    let result: Result<T, E> = await withCheckedContinuation { continuation in
        Thread.detachNewThread {
            do throws(E) {
                continuation.resume(returning: .success(try body()))
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
    }
    return try result.get()
}
