import Basics
import CTAP2
import PasskeyProvider

/// Where the browser's PIN for a security key comes from: `PASSKEY_CLIENT_PIN` (for scripts: given once and never
/// retried, since a wrong PIN counts against the key), else the terminal, read without echo.
public enum SecurityKeyPIN {
    public static func source(environment: [String: String], terminal: Terminal = .shared) -> PINSource {
        if let pin = environment["PASSKEY_CLIENT_PIN"] {
            return { request in request.previousAttemptWasWrong || pin.isEmpty ? nil : pin }
        }
        return { request in
            guard case .line(let pin) = await terminal.readSecret(prompt: prompt(for: request), timeout: .seconds(120))
            else { return nil }
            return pin
        }
    }

    /// The question on the terminal: which key (its name escaped), how many tries are left, and whether the last
    /// PIN was wrong.
    public static func prompt(for request: PINRequest) -> String {
        var prompt = request.previousAttemptWasWrong ? "Wrong PIN. " : ""
        prompt += "PIN for the security key" + (request.key.map { " \($0.terminalSafe)" } ?? "")
        if let retries = request.retriesLeft { prompt += " (\(retries) \(retries == 1 ? "try" : "tries") left)" }
        return prompt + ": "
    }
}
