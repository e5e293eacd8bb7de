import CTAP2
import DBus
import Foundation
import PasskeyProvider

/// Consent through the desktop's notification server (the freedesktop `org.freedesktop.Notifications` interface on
/// the session bus): a notification with the actions Allow and Deny (or one action per account to choose from),
/// the app name `passkey` and an expiry of the request's timeout; the answer is its `ActionInvoked` signal, a
/// `NotificationClosed` without one is a decline (dismissed) or a timeout (expired), and a request still open at
/// its deadline is withdrawn with `CloseNotification`. Only signals from the server that took the notification
/// count.
public final class DesktopNotifications: Sendable {
    static let service = "org.freedesktop.Notifications"
    static let path = "/org/freedesktop/Notifications"

    let connection: DBusConnection

    public init(connection: DBusConnection) { self.connection = connection }

    static func method(_ member: String) -> DBusMethod {
        DBusMethod(destination: service, path: path, interface: service, member: member)
    }

    /// How long the notification server has to take a notification before the route is given up.
    static let notifyTimeout = Duration.seconds(5)

    /// What the notification offers: each action's key and label.
    static func actions(for prompt: ConsentPrompt) -> [String] {
        if prompt.accounts.count > 1 {
            return prompt.accounts.enumerated().flatMap {
                ["account-\($0.offset)", "Sign in as " + ConsentPrompt.plain($0.element.label)]
            }
                + ["deny", "Deny"]
        }
        return ["allow", "Allow", "deny", "Deny"]
    }

    /// The notification's body: the details, with the markup some servers read escaped.
    static func body(for prompt: ConsentPrompt) -> String {
        prompt.details.joined(separator: "\n").replacing("&", with: "&amp;").replacing("<", with: "&lt;")
            .replacing(">", with: "&gt;")
    }

    /// What an action key answers: an account's index, 0 for Allow, nil for Deny or a key that is not ours.
    static func answer(forAction key: String, accounts: Int) -> PromptAnswer<Int>? {
        if key == "allow", accounts <= 1 { return .given(0) }
        if key == "deny" { return .declined }
        if key.hasPrefix("account-"), let index = Int(key.dropFirst(8)), index >= 0, index < accounts {
            return .given(index)
        }
        return nil
    }

    /// Asks `prompt`; nil when no notification server takes it (the next route then asks). `log` gets one line when
    /// the notification is sent and one for its answer.
    public func ask(_ prompt: ConsentPrompt, log: @Sendable (String) -> Void) async -> PromptAnswer<Int>? {
        let signals: AsyncStream<DBusMessage>
        do {
            signals = try await connection.signals(
                matching: DBusMatchRule(path: Self.path, interface: Self.service))
        } catch {
            log("passkey: consent: no notification: \(error)")
            return nil
        }
        let timeoutMilliseconds = Int32(clamping: prompt.timeout.components.seconds * 1000)
        let reply: DBusMessage
        do {
            reply = try await connection.call(
                Self.method("Notify"),
                [
                    .string("passkey"), .uint32(0), .string("dialog-password"), .string(prompt.summary),
                    .string(Self.body(for: prompt)), .strings(Self.actions(for: prompt)),
                    .variantDictionary([
                        "urgency": .byte(2), "category": .string("device"), "desktop-entry": .string("passkey"),
                    ]),
                    .int32(timeoutMilliseconds),
                ], timeout: Self.notifyTimeout)
        } catch is CancellationError {
            return .cancelled
        } catch let error as DBusError {
            log("passkey: consent: no notification server answered (\(error)); asking the next way")
            return nil
        } catch {
            return nil
        }
        var arguments = reply.arguments
        guard let id = try? arguments.next(UInt32.self), let server = reply.sender else {
            log("passkey: consent: the notification server's reply is not a notification ID; asking the next way")
            return nil
        }
        log("passkey: consent: notification \(id) sent: \(prompt.summary)")
        let accounts = prompt.accounts.count
        let answer = await withTaskGroup(of: PromptAnswer<Int>.self) { group -> PromptAnswer<Int> in
            group.addTask {
                for await signal in signals where signal.sender == server {
                    var arguments = signal.arguments
                    guard (try? arguments.next(UInt32.self)) == id else { continue }
                    switch signal.member {
                    case "ActionInvoked":
                        guard let key = try? arguments.next(String.self),
                            let answer = Self.answer(forAction: key, accounts: accounts)
                        else { continue }
                        return answer
                    case "NotificationClosed":
                        // 1: expired; 2: dismissed by the person; 3: closed by a call; 4: undefined.
                        return (try? arguments.next(UInt32.self)) == 1 ? .timedOut : .declined
                    default: continue
                    }
                }
                return .cancelled
            }
            group.addTask {
                do {
                    try await Task.sleep(for: prompt.timeout)
                    return .timedOut
                } catch {
                    return .cancelled
                }
            }
            let first = await group.next() ?? .cancelled
            group.cancelAll()
            return first
        }
        switch answer {
        case .given(let index):
            log("passkey: consent: notification \(id) answered: " + (accounts > 1 ? "account \(index + 1)" : "allow"))
        case .declined: log("passkey: consent: notification \(id) answered: deny")
        case .timedOut: log("passkey: consent: notification \(id) expired without an answer")
        case .cancelled: log("passkey: consent: notification \(id) withdrawn: the request was cancelled")
        }
        if answer == .timedOut || answer == .cancelled {
            // Withdrawn from the screen, in a task of its own so that a cancelled request still sends it; a server
            // that already closed it answers with an error, which changes nothing.
            let connection = connection
            await Task {
                try? await connection.callIgnoringReply(
                    Self.method("CloseNotification"), [.uint32(id)], timeout: .seconds(2))
            }.value
        }
        return answer
    }
}
