import CTAP2
import Foundation
import JSON

/// A request queued for `passkey pending` / `passkey approve ID` / `passkey deny ID` when nobody can be asked
/// otherwise: what it asks and until when. Its file (`ID.json` in `$XDG_RUNTIME_DIR/passkey/pending`) holds this as
/// JSON; no secret is ever in it.
public struct PendingConsent: Hashable, Sendable {
    /// Eight lowercase hex digits.
    public var id: String
    public var relyingPartyID: String?
    /// `sign in`, `create a passkey`…
    public var action: String
    public var summary: String
    public var details: [String]
    /// The accounts to choose from (`passkey approve ID --account N`); empty when there is no choice.
    public var accounts: [String]
    /// Where the passkey can be created (`passkey approve ID --place N`): this computer or a phone, for a security
    /// key with a phone behind it; empty otherwise.
    public var places: [String]
    /// Seconds since 1970.
    public var created: Double
    public var expires: Double
    /// The process that waits for the answer.
    public var processID: Int32

    public init(
        id: String, relyingPartyID: String?, action: String, summary: String, details: [String], accounts: [String],
        places: [String] = [], created: Double, expires: Double, processID: Int32
    ) {
        self.id = id
        self.relyingPartyID = relyingPartyID
        self.action = action
        self.summary = summary
        self.details = details
        self.accounts = accounts
        self.places = places
        self.created = created
        self.expires = expires
        self.processID = processID
    }

    /// The request for `prompt`, made at `now` (seconds since 1970), expiring after the prompt's timeout.
    public init(id: String, prompt: ConsentPrompt, now: Double, processID: Int32) {
        let timeout = Double(prompt.timeout.components.seconds) + Double(prompt.timeout.components.attoseconds) / 1e18
        self.init(
            id: id, relyingPartyID: prompt.relyingPartyID.map(ConsentPrompt.plain), action: prompt.actionName,
            summary: prompt.summary, details: prompt.details,
            accounts: prompt.accounts.map { ConsentPrompt.plain($0.label) },
            places: prompt.choice == .place ? prompt.choices : [], created: now, expires: now + timeout,
            processID: processID)
    }

    /// Whether `text` is a request ID: eight lowercase hex digits (so it is safe as a file name).
    public static func isID(_ text: String) -> Bool {
        text.utf8.count == 8 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// A new ID from `random` bytes (four of them).
    public static func id(from random: [UInt8]) -> String {
        random.prefix(4).map { String($0 >> 4, radix: 16) + String($0 & 0xF, radix: 16) }.joined()
    }

    public func isExpired(now: Double) -> Bool { now >= expires }

    /// Whole seconds left at `now` (0 once expired).
    public func secondsLeft(now: Double) -> Int { max(0, Int((expires - now).rounded(.up))) }

    // MARK: JSON

    public var json: JSONValue {
        .object(omittingNil: [
            ("id", .string(id)), ("rpId", relyingPartyID.map(JSONValue.string)), ("action", .string(action)),
            ("summary", .string(summary)), ("details", .strings(details)), ("accounts", .strings(accounts)),
            ("places", places.isEmpty ? nil : .strings(places)), ("created", .number(created)),
            ("expires", .number(expires)), ("processId", .integer(processID)),
        ])
    }

    /// Reads a request file's JSON; nil when it is not one (the file is then removed as damaged).
    public init?(json bytes: [UInt8]) {
        guard let value = try? JSONValue(parsing: bytes),
            case .string(let id)? = value["id"], Self.isID(id),
            case .string(let action)? = value["action"], case .string(let summary)? = value["summary"],
            case .array(let details)? = value["details"], case .array(let accounts)? = value["accounts"],
            case .number(let created)? = value["created"], case .number(let expires)? = value["expires"],
            case .number(let processID)? = value["processId"], let pid = Int32(exactly: processID)
        else { return nil }
        let relyingParty: String?
        switch value["rpId"] {
        case nil: relyingParty = nil
        case .string(let text)?: relyingParty = text
        default: return nil
        }
        let places: [JSONValue]
        switch value["places"] {
        case nil: places = []
        case .array(let entries)?: places = entries
        default: return nil
        }
        let detailTexts = details.compactMap { if case .string(let text) = $0 { text } else { nil } }
        let accountTexts = accounts.compactMap { if case .string(let text) = $0 { text } else { nil } }
        let placeTexts = places.compactMap { if case .string(let text) = $0 { text } else { nil } }
        guard detailTexts.count == details.count, accountTexts.count == accounts.count,
            placeTexts.count == places.count, accountTexts.isEmpty || placeTexts.isEmpty
        else { return nil }
        self.init(
            id: id, relyingPartyID: relyingParty, action: action, summary: summary, details: detailTexts,
            accounts: accountTexts, places: placeTexts, created: created, expires: expires, processID: pid)
    }
}

/// The answer `passkey approve` or `passkey deny` leaves for a queued request (`ID.answer`).
public enum PendingAnswer: Hashable, Sendable {
    /// Approved; `choice` is the index of the account or place chosen (0 when there was no choice). The file keeps
    /// it as `account`, as it was named before places.
    case allow(choice: Int)
    case deny

    public var json: JSONValue {
        switch self {
        case .allow(let choice): .object(omittingNil: [("answer", .string("allow")), ("account", .integer(choice))])
        case .deny: .object(omittingNil: [("answer", .string("deny"))])
        }
    }

    public init?(json bytes: [UInt8]) {
        guard let value = try? JSONValue(parsing: bytes) else { return nil }
        switch value["answer"] {
        case .string("allow")?:
            guard case .number(let account)? = value["account"], let index = Int(exactly: account), index >= 0 else {
                return nil
            }
            self = .allow(choice: index)
        case .string("deny")?: self = .deny
        default: return nil
        }
    }

    /// The answer to `request` for `approve` (`account`: the 1-based `--account`, `place` the 1-based `--place`,
    /// nil when not given), or why it cannot be given.
    public static func approval(of request: PendingConsent, account: Int?, place: Int? = nil) -> Result<
        PendingAnswer, PendingRefusal
    > {
        if !request.places.isEmpty {
            guard account == nil else { return .failure(.choosePlace(request.places)) }
            guard let place else { return .failure(.choosePlace(request.places)) }
            guard (1...request.places.count).contains(place) else {
                return .failure(.noSuchPlace(place, count: request.places.count))
            }
            return .success(.allow(choice: place - 1))
        }
        guard place == nil else { return .failure(.noPlaces) }
        if request.accounts.count > 1 {
            guard let account else { return .failure(.chooseAccount(request.accounts)) }
            guard (1...request.accounts.count).contains(account) else {
                return .failure(.noSuchAccount(account, count: request.accounts.count))
            }
            return .success(.allow(choice: account - 1))
        }
        guard account == nil || account == 1 else {
            return .failure(.noSuchAccount(account ?? 0, count: max(request.accounts.count, 1)))
        }
        return .success(.allow(choice: 0))
    }
}

/// Why `passkey approve` or `passkey deny` cannot answer a request.
public enum PendingRefusal: Error, Hashable, Sendable, CustomStringConvertible {
    case notFound(String)
    case expired(String)
    case chooseAccount([String])
    case noSuchAccount(Int, count: Int)
    case choosePlace([String])
    case noSuchPlace(Int, count: Int)
    case noPlaces
    case notAnID(String)

    public var description: String {
        switch self {
        case .notFound(let id): "no request \(id) is waiting (see passkey pending)"
        case .expired(let id): "request \(id) has expired; it is removed"
        case .chooseAccount(let accounts):
            "the request offers \(accounts.count) accounts: give --account N ("
                + accounts.enumerated().map { "\($0.offset + 1) \($0.element)" }.joined(separator: ", ") + ")"
        case .noSuchAccount(let account, let count): "there is no account \(account) (1 to \(count))"
        case .choosePlace(let places):
            "the request asks where to create the passkey: give --place N ("
                + places.enumerated().map { "\($0.offset + 1) \($0.element)" }.joined(separator: ", ") + ")"
        case .noSuchPlace(let place, let count): "there is no place \(place) (1 to \(count))"
        case .noPlaces: "the request does not ask where to create a passkey: leave out --place"
        case .notAnID(let text): "\(text) is not a request ID (eight hex digits, as passkey pending shows)"
        }
    }
}
