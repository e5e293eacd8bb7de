import Dispatch

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

/// Runs blocking socket work on a Dispatch thread, so that it never holds up Swift's cooperative pool.
func offloaded<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
    let result: Result<T, E> = await withCheckedContinuation { continuation in
        DispatchQueue.global().async {
            do throws(E) {
                continuation.resume(returning: .success(try body()))
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
    }
    return try result.get()
}
