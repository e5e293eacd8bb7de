import ArgumentParser
import Dispatch
import Foundation
import PasskeyProvider
import PasskeyStoreIO
import StoreAgent
import StoreAgentIO
import TerminalIO

#if canImport(Glibc)
    import Glibc
#endif

extension Passkey {
    struct Unlock: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Unlock the store for a while: later commands open it without asking for the passphrase.",
            discussion: """
                Asks for the store's passphrase (three tries), starts the store agent when none runs, and gives it \
                the passphrase; the agent keeps the store's key in locked memory and opens the store for later \
                commands of yours, which then do not ask for the passphrase to open it (user verification in a \
                sign-in still asks, once). The key is forgotten after --for without use (default 15 minutes), 24 \
                hours after unlocking at the latest, on `passkey lock`, and when the agent stops. The agent listens \
                on $XDG_RUNTIME_DIR/passkey/agent.sock.
                """)

        @OptionGroup var store: StoreOptions
        @Option(
            name: .customLong("for"),
            help: ArgumentHelp(
                "Forget the key after this long without use: 90s, 15m, 2h (10s to 24h; default 15m).",
                valueName: "duration"))
        var idle: String?

        func validate() throws {
            if let idle, parseIdleDuration(idle) == nil {
                throw ValidationError("--for takes a duration from 10s to 24h, such as 90s, 15m or 2h")
            }
        }

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let environment = ProcessInfo.processInfo.environment
            let idle = idle.flatMap(parseIdleDuration) ?? HeldKeys<Void>.defaultIdle
            let socket: String
            do {
                socket = try AgentSocket.path(environment: environment)
            } catch {
                throw CommandFailure("cannot unlock: \(error.message)")
            }
            let access = store.access()
            guard access.exists else { throw StoreOptions.noStore(at: access.url) }
            let client = AgentClient(socketPath: socket)
            if !client.isAnswering { try startAgent(client) }
            let interface = TerminalInterface()
            var tries = PassphraseTries()
            while true {
                let passphrase: String
                if let given = environment["PASSKEY_PASSPHRASE"], !given.isEmpty {
                    passphrase = given
                } else {
                    guard interface.canAsk else {
                        throw CommandFailure(
                            "the passkey store needs a passphrase",
                            hint: "Set PASSKEY_PASSPHRASE, or run passkey in a terminal.")
                    }
                    guard case .given(let typed) = await interface.secret(.storePassphrase(path: access.url.path)),
                        !typed.isEmpty
                    else { throw CommandFailure("no passphrase given") }
                    passphrase = typed
                }
                let reply: AgentReply
                do {
                    reply = try client.send(
                        .unlock(store: access.agentPath, passphrase: Array(passphrase.utf8), idle: idle))
                } catch {
                    throw CommandFailure("cannot unlock: \(error.message)")
                }
                switch reply {
                case .done:
                    let seconds = idle.components.seconds
                    let span = seconds % 60 == 0 ? "\(seconds / 60) min" : "\(seconds) s"
                    printLine(
                        "Unlocked \(access.url.path): the key is forgotten after \(span) without use, "
                            + "or now with `passkey lock`.")
                    return
                case .wrongPassphrase:
                    let left = tries.wrong()
                    interface.report(.wrongPassphrase(attemptsLeft: left))
                    if left == 0 || environment["PASSKEY_PASSPHRASE"] != nil {
                        throw CommandFailure("the passphrase does not open the passkey store")
                    }
                case .refused(let reason):
                    throw CommandFailure("cannot unlock: \(reason)")
                default:
                    throw CommandFailure("cannot unlock: the agent's answer makes no sense")
                }
            }
        }

        /// Starts `passkey agent` in a session of its own, its output discarded, and waits until it answers.
        private func startAgent(_ client: AgentClient) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            process.arguments = ["agent", "--started-by-unlock"]
            var environment = ProcessInfo.processInfo.environment
            environment["PASSKEY_PASSPHRASE"] = nil
            process.environment = environment
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            do {
                try process.run()
            } catch {
                throw CommandFailure("cannot start the passkey agent: \(error.localizedDescription)")
            }
            for _ in 0..<100 {
                if client.isAnswering { return }
                if !process.isRunning {
                    throw CommandFailure(
                        "the passkey agent stopped at once", hint: "Run `passkey agent` to see why.")
                }
                usleep(50_000)
            }
            throw CommandFailure("the passkey agent did not start answering within 5 s")
        }
    }

    struct Lock: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make the store agent forget the store's key (every store's without --store).")

        @Option(
            name: .customLong("store"),
            help: ArgumentHelp("Forget only this store's key.", valueName: "path"))
        var path: String?

        @OptionGroup var verbosity: OutputOptions

        func run() throws {
            let socket: String
            do {
                socket = try AgentSocket.path(environment: ProcessInfo.processInfo.environment)
            } catch {
                throw CommandFailure("cannot lock: \(error.message)")
            }
            let client = AgentClient(socketPath: socket)
            guard client.isAnswering else {
                printLine("No passkey agent is running; no key is held.")
                return
            }
            let store = path.map { StoreLock.resolved(URL(fileURLWithPath: $0)).path }
            do {
                guard case .done = try client.send(.lock(store: store)) else {
                    throw CommandFailure("cannot lock: the agent refused")
                }
            } catch let error as AgentError {
                throw CommandFailure("cannot lock: \(error.message)")
            }
            printLine(store.map { "The agent forgot the key of \($0)." } ?? "The agent forgot every store's key.")
        }
    }

    struct Agent: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run the store agent in the foreground (`passkey unlock` starts one when none runs).",
            discussion: """
                Listens on $XDG_RUNTIME_DIR/passkey/agent.sock (directory 0700, socket 0600) for processes of \
                this user only, holds the keys that `passkey unlock` gives it in locked memory, and opens, seals \
                and authenticates for the commands that ask; it never hands a key out. For a systemd user unit: \
                ExecStart=passkey agent. SIGTERM, SIGINT or SIGHUP stop it: its keys are wiped and its socket \
                removed.
                """)

        @Flag(name: .customLong("started-by-unlock"), help: .hidden)
        var startedByUnlock = false

        @OptionGroup var verbosity: OutputOptions

        func run() throws {
            let socket: String
            do {
                socket = try AgentSocket.path(environment: ProcessInfo.processInfo.environment)
            } catch {
                throw CommandFailure("cannot start the agent: \(error.message)")
            }
            // Started by `unlock`: a session of its own, so the terminal's ^C and hang-up do not reach it, and gone
            // once it holds no key.
            if startedByUnlock { _ = setsid() }
            let server: AgentServer
            do {
                server = try AgentServer(options: .init(socketPath: socket, exitsWhenEmpty: startedByUnlock))
            } catch {
                throw CommandFailure("cannot start the agent: \(error.message)")
            }
            // SIGTERM, SIGINT and SIGHUP end the agent as `lock` would: the keys wiped, the socket removed; trapped
            // before the listening line, so a signal sent as soon as it appears is not lost.
            let stops = ServingProcess.trappingStopSignals([SIGTERM, SIGINT, SIGHUP]) { server.stop() }
            if !startedByUnlock {
                printLine("passkey agent: listening on \(socket)")
                fflush(nil)  // at once, for a journal or a script waiting on it
            }
            server.run()
            stops.forEach { $0.cancel() }
        }
    }
}
