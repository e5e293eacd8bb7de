import Basics
import JSON
import PublicSuffix
import WebAuthnClient

/// What `passkey inspect origin` prints of a verdict: five aligned lines, one JSON object, or in `--batch` one JSON
/// line for each `origin<TAB>rpId` line.
public enum OriginCheckLines {
    public static func text(_ verdict: RelyingPartyIDVerdict) -> [String] {
        [
            "valid    \(verdict.valid ? "yes" : "no")",
            "reason   \(verdict.reason.terminalSafe)",
            "rule     \(verdict.rule.rawValue)",
            "origin   \(verdict.origin.terminalSafe)",
            "RP ID    \(verdict.rpID?.terminalSafe ?? "none")",
        ]
    }

    /// `valid`, `reason`, `rule`, `origin` and `rpId` (null when there is none), keys sorted.
    public static func json(_ verdict: RelyingPartyIDVerdict) -> JSONValue {
        .sortedObject([
            "valid": .bool(verdict.valid), "reason": .string(verdict.reason), "rule": .string(verdict.rule.rawValue),
            "origin": .string(verdict.origin), "rpId": verdict.rpID.map { .string($0) } ?? .null,
        ])
    }

    /// The verdict for one `origin<TAB>rpId` line of a batch (no tab: the origin's default RP ID is checked; a
    /// trailing CR is dropped), or nil for an empty line. A URL that does not parse gets `"rule": "badURL"`.
    public static func batch(line bytes: some Collection<UInt8>, list: PublicSuffixList) -> JSONValue? {
        var text = String(decoding: bytes, as: UTF8.self)
        if text.hasSuffix("\r") { text.removeLast() }
        guard !text.isEmpty else { return nil }
        let fields = text.split(separator: "\t", maxSplits: 1, omittingEmptySubsequences: false)
        let rpID = fields.count > 1 ? String(fields[1]) : nil
        do {
            let origin = try WebOrigin(url: String(fields[0]))
            return json(RelyingPartyIDCheck.evaluate(origin: origin, rpID: rpID, list: list))
        } catch {
            return .sortedObject([
                "valid": .bool(false), "rule": .string("badURL"),
                "reason": .string("\(fields[0].prefix(200)) is not a URL: \(error)"), "origin": .null,
                "rpId": rpID.map { .string($0) } ?? .null,
            ])
        }
    }
}
