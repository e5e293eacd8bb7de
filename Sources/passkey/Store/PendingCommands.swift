import ArgumentParser
import ConsentIO
import Foundation
import JSON
import PasskeyProvider

extension Passkey {
    /// `passkey pending`: the requests a service without a terminal queued for an answer.
    struct Pending: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the requests waiting for your answer (from services without a terminal).",
            discussion: """
                A service without a terminal (`passkey serve` or `passkey listen` as a systemd user unit) asks \
                through a desktop notification; when no notification server answers (or --consent queue), it \
                queues the request in $XDG_RUNTIME_DIR/passkey/pending (yours only) until it expires. Answer one \
                with `passkey approve ID` or `passkey deny ID`. Expired requests are removed. See Docs/Consent.md.
                """)

        @OptionGroup var format: JSONOption
        @OptionGroup var verbosity: OutputOptions

        func run() throws {
            guard let queue = PendingQueue(environment: ProcessInfo.processInfo.environment) else {
                throw CommandFailure("cannot list pending requests: \(PendingQueue.noRuntimeDirectory.message)")
            }
            let now = Date().timeIntervalSince1970
            let requests: [PendingConsent]
            do {
                requests = try queue.list(now: now)
            } catch {
                throw CommandFailure("cannot list pending requests: \(error.message)")
            }
            if format.json {
                let entries = requests.map { request -> JSONValue in
                    .object(omittingNil: [
                        ("id", .string(request.id)), ("rpId", request.relyingPartyID.map(JSONValue.string)),
                        ("action", .string(request.action)), ("summary", .string(request.summary)),
                        ("accounts", .strings(request.accounts)),
                        ("places", request.places.isEmpty ? nil : .strings(request.places)),
                        ("expires", .string(Self.timestamp(request.expires))),
                        ("expiresIn", .integer(request.secondsLeft(now: now))),
                    ])
                }
                printJSON(
                    String(
                        decoding: JSONValue.object(omittingNil: [("pending", .array(entries))]).serialized(),
                        as: UTF8.self))
                return
            }
            guard !requests.isEmpty else {
                printLine("No request is waiting.")
                return
            }
            for request in requests {
                printLine("\(request.id)  \(request.summary)  (expires in \(request.secondsLeft(now: now)) s)")
                for (index, account) in request.accounts.enumerated() where request.accounts.count > 1 {
                    printLine("          account \(index + 1): \(account)")
                }
                for (index, place) in request.places.enumerated() {
                    printLine("          place \(index + 1): \(place)")
                }
            }
            printLine("Answer with `passkey approve ID` or `passkey deny ID`.")
        }

        /// RFC 3339 in UTC, whole seconds.
        static func timestamp(_ seconds: Double) -> String {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime]
            return formatter.string(from: Date(timeIntervalSince1970: seconds.rounded(.down)))
        }
    }

    /// `passkey approve ID`.
    struct Approve: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Allow a request waiting for your answer (see `passkey pending`).",
            discussion: """
                Answers the request as the Allow of a notification does: it counts as your presence, and as user \
                verification only within consent-uv-window minutes of `passkey unlock` (Docs/Consent.md). \
                An expired request is refused and removed (status 4, as for an unknown ID).
                """)

        @Argument(help: "The request's ID, as `passkey pending` shows it.") var id: String
        @OptionGroup var verbosity: OutputOptions
        @Option(help: "The account to sign in as, when the request offers several (1 is the first).")
        var account: Int?
        @Option(
            help:
                "Where to create the passkey, when the request asks (a key with a phone behind it): 1 this computer, 2 a phone."
        )
        var place: Int?

        func validate() throws {
            guard PendingConsent.isID(id) else { throw ValidationError(PendingRefusal.notAnID(id).description) }
            if let account, account < 1 { throw ValidationError("--account counts from 1") }
            if let place, place < 1 { throw ValidationError("--place counts from 1") }
        }

        func run() throws {
            let account = account
            let place = place
            let request = try PendingAnswering.answer(id, verb: "approve") {
                PendingAnswer.approval(of: $0, account: account, place: place)
            }
            printLine("Allowed \(request.id): \(request.summary).")
        }
    }

    /// `passkey deny ID`.
    struct Deny: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Refuse a request waiting for your answer (see `passkey pending`).",
            discussion: "An expired request is refused and removed (status 4, as for an unknown ID).")

        @Argument(help: "The request's ID, as `passkey pending` shows it.") var id: String
        @OptionGroup var verbosity: OutputOptions

        func validate() throws {
            guard PendingConsent.isID(id) else { throw ValidationError(PendingRefusal.notAnID(id).description) }
        }

        func run() throws {
            let request = try PendingAnswering.answer(id, verb: "deny") { _ in .success(.deny) }
            printLine("Denied \(request.id): \(request.summary).")
        }
    }
}

/// What `approve` and `deny` share: the queue, the answer, and the failure line with its status.
enum PendingAnswering {
    static func answer(
        _ id: String, verb: String, decide: (PendingConsent) -> Result<PendingAnswer, PendingRefusal>
    ) throws -> PendingConsent {
        guard let queue = PendingQueue(environment: ProcessInfo.processInfo.environment) else {
            throw CommandFailure("cannot \(verb) \(id): \(PendingQueue.noRuntimeDirectory.message)")
        }
        do {
            return try queue.answer(id, now: Date().timeIntervalSince1970, decide: decide)
        } catch {
            throw CommandFailure(
                "cannot \(verb) \(id): \(error.message)",
                exitCode: error.notFound ? ExitStatus.notFound : ExitStatus.failure)
        }
    }
}
