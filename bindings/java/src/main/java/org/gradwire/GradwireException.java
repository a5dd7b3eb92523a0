package org.gradwire;

/** A gradwire call failed: the C status code, its symbol name and the C call's message. */
public class GradwireException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final int status;
    private final String statusName;

    public GradwireException(int status, String statusName, String message) {
        super(statusName + ": " + message);
        this.status = status;
        this.statusName = statusName;
    }

    /** The gw_status code (negative). */
    public int getStatus() {
        return status;
    }

    /** The status as an enum constant. */
    public Status getStatusEnum() {
        return Status.swigToEnum(status);
    }

    /** The symbol name, e.g. "GW_ERR_FRAME_CHECKSUM". */
    public String getStatusName() {
        return statusName;
    }
}
