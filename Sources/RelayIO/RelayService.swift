import Logging
import ServiceLifecycle

/// A started ``RelayServer`` as a swift-service-lifecycle `Service`: it serves until the group shuts down.
///
/// On graceful shutdown (`ServiceGroup`'s graceful shutdown signals, SIGTERM in `passkey-relay`) the relay drains
/// (``RelayServer/drain()``: `/healthz` and `/cable/new` answer 503, `/cable/connect` and the open tunnels go on)
/// and stops once its last tunnel has ended. On cancellation (a cancellation signal such as SIGINT, the group's
/// `maximumGracefulShutdownDuration`, or the task being cancelled) it stops at once, closing WebSockets with 1001.
/// `run()` returns normally either way.
///
/// ```swift
/// let server = try await RelayServer.start(configuration, logger: logger)
/// let group = ServiceGroup(
///     services: [RelayService(server: server, logger: logger)], gracefulShutdownSignals: [.sigterm],
///     cancellationSignals: [.sigint], logger: logger)
/// try await group.run()
/// ```
public struct RelayService: Service {
    public let server: RelayServer
    private let logger: Logger

    public init(server: RelayServer, logger: Logger) {
        self.server = server
        self.logger = logger
    }

    public func run() async {
        do {
            try await gracefulShutdown()
        } catch {
            // Cancelled before any graceful shutdown.
            logger.info("stopping now")
            await server.shutdown()
            return
        }
        logger.info("draining: /cable/new and /healthz answer 503 until the open tunnels end")
        let server = server
        await withTaskCancellationHandler {
            await server.drain()
        } onCancel: {
            server.endDrain()
        }
        logger.info(Task.isCancelled ? "stopping now" : "drained")
        await server.shutdown()
    }
}
