/// A failure while a command runs (not a bad argument): printed as one line and a hint, without the usage text.
struct CommandFailure: Error, CustomStringConvertible {
    let message: String
    let hint: String?

    init(_ message: String, hint: String? = nil) {
        self.message = message
        self.hint = hint
    }

    var description: String { hint.map { "\(message)\n\($0)" } ?? message }
}
