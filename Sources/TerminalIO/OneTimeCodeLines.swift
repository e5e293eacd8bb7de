import Basics
import Foundation
import JSON
import PasskeyStoreIO

/// What `passkey otp` prints: a line a login, or with `--json` objects in the documented key style; never a secret.
public enum OneTimeCodeLines {
    /// `SHA1, 6 digits, 30 s`.
    public static func parameters(_ saved: SavedOneTimeCode) -> String {
        "\(saved.parameters.algorithm), \(saved.parameters.digits) digits, \(saved.parameters.period) s"
    }

    /// `example.com  "alice"  GitHub  (SHA1, 6 digits, 30 s)`, or the damaged row's line.
    public static func line(_ entry: OneTimeCodeEntry) -> String {
        switch entry {
        case .intact(let code):
            let saved = code.saved
            let issuer = saved.issuer.map { "  issuer \($0.siteChosen)" } ?? ""
            return "\(saved.service.text.terminalSafe)  \(saved.userName.siteChosen)\(issuer)  (\(parameters(saved)))"
        case .damaged(let damaged):
            return "\((damaged.service ?? "?").terminalSafe)  \((damaged.userName ?? "?").siteChosen)  \(damaged)"
        }
    }

    /// `{"algorithm", "created", "digits", "issuer", "period", "site", "user"}`.
    public static func json(_ saved: SavedOneTimeCode) -> JSONValue {
        .object(omittingNil: [
            ("algorithm", .string(saved.parameters.algorithm.rawValue)),
            ("created", .string(ISO8601DateFormatter().string(from: saved.creationDate))),
            ("digits", .number(Double(saved.parameters.digits))),
            ("issuer", saved.issuer.map(JSONValue.string)),
            ("period", .number(Double(saved.parameters.period))),
            ("site", .string(saved.service.text)),
            ("user", .string(saved.userName)),
        ])
    }

    /// An intact row as `json(_:)`; a damaged one as `{"damaged": REASON, "site", "user"}`.
    public static func json(_ entry: OneTimeCodeEntry) -> JSONValue {
        switch entry {
        case .intact(let code): json(code.saved)
        case .damaged(let damaged):
            .object(omittingNil: [
                ("damaged", .string("\(damaged)")), ("site", damaged.service.map(JSONValue.string)),
                ("user", damaged.userName.map(JSONValue.string)),
            ])
        }
    }

    /// `{"code", "secondsLeft", "site", "user"}`: what `otp code --json` prints.
    public static func codeJSON(_ saved: SavedOneTimeCode, code: String, secondsLeft: Int) -> JSONValue {
        .object(omittingNil: [
            ("code", .string(code)), ("secondsLeft", .number(Double(secondsLeft))),
            ("site", .string(saved.service.text)), ("user", .string(saved.userName)),
        ])
    }
}
